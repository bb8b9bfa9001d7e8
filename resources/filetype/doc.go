// Package filetype is the file resource type: it owns the file properties
// (ensure present, absent or directory; content or source; owner, group,
// mode; force) and their validation, the decision of what must change
// (existence, content checksum, owner, group, mode, checked in that order),
// the noop messages, and the check after applying that the desired state was
// reached.
//
// The platform work is done through the Provider interface declared here;
// providers/fileposix implements it for Unix-like hosts. A resource with no
// content and no source manages only existence and attributes: an existing
// file's content is left alone and a missing file is created empty.
package filetype
