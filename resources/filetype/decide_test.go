package filetype_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

const (
	sumA = "aaaa"
	sumB = "bbbb"
)

// found builds a state as a provider's Status would report it.
func found(ensure, checksum, owner, group, mode string) *protocol.FileState {
	st := &protocol.FileState{CommonState: protocol.NewCommonState("file", "/srv/f", ensure)}
	st.Metadata = &protocol.FileMetadata{Name: "/srv/f", Provider: "fake"}
	if ensure != "absent" {
		st.Metadata.Checksum, st.Metadata.Owner, st.Metadata.Group, st.Metadata.Mode = checksum, owner, group, mode
		st.Metadata.Extended = map[string]any{"uid": uint32(0), "gid": uint32(0)}
	}
	return st
}

var (
	stAbsent      = found("absent", "", "", "", "")
	stFileMatch   = found("present", sumA, "root", "root", "0644")
	stFileContent = found("present", sumB, "root", "root", "0644")
	stFileAttrs   = found("present", sumA, "nobody", "root", "0644")
	stDirMatch    = found("directory", "", "root", "root", "0644")
	stDirAttrs    = found("directory", "", "root", "root", "0700")
	stSymlink     = found("symlink", "", "root", "root", "0777")
	stSpecial     = found("special", "", "root", "root", "0644")
)

var _ = Describe("decide", func() {
	DescribeTable("decides by desired and current state: nothing when they match, else remove, create the directory, store, or set attributes when only they differ",
		func(desired string, cur *protocol.FileState, wantAction string, wantReplace bool) {
			action, replace, _, err := filetype.DecideForTest(desired, true, sumA, "root", "root", "0644", cur)
			Expect(err).ToNot(HaveOccurred())
			Expect(action).To(Equal(wantAction))
			Expect(replace).To(Equal(wantReplace))
		},
		Entry("absent | absent | None", "absent", stAbsent, "none", false),
		Entry("absent | present | Remove", "absent", stFileMatch, "Remove", false),
		Entry("absent | directory | Remove", "absent", stDirMatch, "Remove", false),
		Entry("directory | directory + matching attrs | None", "directory", stDirMatch, "none", false),
		Entry("directory | absent | CreateDirectory", "directory", stAbsent, "CreateDirectory", false),
		Entry("directory | present | CreateDirectory (the file is removed first)", "directory", stFileMatch, "CreateDirectory", true),
		Entry("directory | directory + wrong attrs | CreateDirectory (updates attrs)", "directory", stDirAttrs, "CreateDirectory", false),
		Entry("present | present + matching all | None", "present", stFileMatch, "none", false),
		Entry("present | absent | Store", "present", stAbsent, "Store", false),
		Entry("present | present + wrong content | Store", "present", stFileContent, "Store", false),
		Entry("present | present + wrong attrs | SetAttributes (content already matches; same result as Store without rewriting)", "present", stFileAttrs, "SetAttributes", false),
		Entry("absent | symlink | Remove (the link, never its target)", "absent", stSymlink, "Remove", false),
		Entry("absent | special | Remove", "absent", stSpecial, "Remove", false),
	)

	DescribeTable("refuses symbolic links and special files where a file or directory is wanted",
		func(desired string, cur *protocol.FileState, want error) {
			_, _, _, err := filetype.DecideForTest(desired, true, sumA, "root", "root", "0644", cur)
			Expect(err).To(MatchError(want))
		},
		Entry("present over a symlink", "present", stSymlink, filetype.ErrSymlink),
		Entry("directory over a symlink", "directory", stSymlink, filetype.ErrSymlink),
		Entry("present over a FIFO", "present", stSpecial, filetype.ErrUnsupportedFileType),
		Entry("directory over a FIFO", "directory", stSpecial, filetype.ErrUnsupportedFileType),
		Entry("present over a directory (never replaced by the file, empty or not)", "present", stDirMatch, filetype.ErrDirectoryInTheWay),
	)

	DescribeTable("state checks in order: ensure, content, owner, group, mode",
		func(cur *protocol.FileState, wantMsg string) {
			_, _, msg, err := filetype.DecideForTest("present", true, sumA, "root", "root", "0644", cur)
			Expect(err).ToNot(HaveOccurred())
			Expect(msg).To(Equal(wantMsg))
		},
		Entry("ensure", stAbsent, "Would have created the file"),
		Entry("content", stFileContent, "Would have created the file: content differs"),
		// With content set, CCM says it would have created the file even
		// when only attributes differ; what differs follows, as ours.
		Entry("owner", found("present", sumA, "nobody", "root", "0644"), "Would have created the file: owner nobody should be root"),
		Entry("group", found("present", sumA, "root", "nogroup", "0644"), "Would have created the file: group nogroup should be root"),
		Entry("mode", found("present", sumA, "root", "root", "0600"), "Would have created the file: mode 0600 should be 0644"),
		Entry("all of them, in order", found("present", sumB, "nobody", "nogroup", "0600"),
			"Would have created the file: content differs, owner nobody should be root, group nogroup should be root, mode 0600 should be 0644"),
	)

	DescribeTable("says under noop what it would have done, in CCM's sentences: created or removed",
		func(desired string, cur *protocol.FileState, wantMsg string) {
			_, _, msg, err := filetype.DecideForTest(desired, true, sumA, "root", "root", "0644", cur)
			Expect(err).ToNot(HaveOccurred())
			Expect(msg).To(Equal(wantMsg))
		},
		Entry("creating a file", "present", stAbsent, "Would have created the file"),
		Entry("creating a directory", "directory", stAbsent, "Would have created directory"),
		Entry("fixing a directory", "directory", stDirAttrs, "Would have created directory: mode 0700 should be 0644"),
		Entry("a file where a directory is wanted", "directory", stFileMatch, "Would have created directory: a regular file is in the way"),
		Entry("removing a file", "absent", stFileMatch, "Would have removed the file"),
		Entry("removing a directory", "absent", stDirMatch, "Would have removed the directory"),
		Entry("removing a symbolic link", "absent", stSymlink, "Would have removed the file"),
		Entry("nothing to do", "present", stFileMatch, ""),
	)

	It("leaves the content of an existing file alone when content is unmanaged", func() {
		action, _, _, err := filetype.DecideForTest("present", false, "", "root", "root", "0644", stFileContent)
		Expect(err).ToNot(HaveOccurred())
		Expect(action).To(Equal("none"))
		action, _, msg, err := filetype.DecideForTest("present", false, "", "root", "root", "0600", stFileContent)
		Expect(err).ToNot(HaveOccurred())
		Expect(action).To(Equal("SetAttributes"))
		Expect(msg).To(Equal("Would have updated attributes: mode 0644 should be 0600"))
	})

	It("says CCM's sentence for creating a file whose content is unmanaged", func() {
		action, _, msg, err := filetype.DecideForTest("present", false, "", "root", "root", "0644", stAbsent)
		Expect(err).ToNot(HaveOccurred())
		Expect(action).To(Equal("Store"))
		Expect(msg).To(Equal("Would have created an empty file with requested attributes"))
	})

	DescribeTable("says CCM's sentence for removing, by what is there and force",
		func(cur *protocol.FileState, force bool, wantMsg string) {
			Expect(filetype.RemoveMessageForTest(force, cur)).To(Equal(wantMsg))
		},
		Entry("a directory", stDirMatch, false, "Would have removed the directory"),
		Entry("a directory, with force", stDirMatch, true, "Would have recursively removed the directory"),
		Entry("a file, with force", stFileMatch, true, "Would have removed the file"),
		Entry("a symbolic link, with force", stSymlink, true, "Would have removed the file"),
	)

	It("matches a numeric owner and group against the ids Status reports", func() {
		action, _, _, err := filetype.DecideForTest("present", true, sumA, "0", "0", "0644", stFileMatch)
		Expect(err).ToNot(HaveOccurred())
		Expect(action).To(Equal("none"))
		action, _, msg, err := filetype.DecideForTest("present", true, sumA, "1000", "0", "0644", stFileMatch)
		Expect(err).ToNot(HaveOccurred())
		Expect(action).To(Equal("SetAttributes"))
		Expect(msg).To(HaveSuffix("owner root should be 1000"))
	})
})
