package protocol

// Protocol ids carried in the "protocol" field of every document.
const (
	// EnsureRequestProtocol identifies a request to ensure one resource.
	EnsureRequestProtocol = "io.choria.ccm.v1.resource.ensure.request"
	// EnsureResponseProtocol identifies the answer to an ensure request.
	EnsureResponseProtocol = "io.choria.ccm.v1.resource.ensure.response"
	// TransactionEventProtocol identifies the record of one resource being applied.
	TransactionEventProtocol = "io.choria.ccm.v1.transaction.event"
)

// StateProtocol returns the protocol id of the state document of a resource
// type, io.choria.ccm.v1.resource.<type>.state.
func StateProtocol(typeName string) string {
	return "io.choria.ccm.v1.resource." + typeName + ".state"
}

// Resource type names.
const (
	TypeFile     = "file"
	TypeExec     = "exec"
	TypePackage  = "package"
	TypeService  = "service"
	TypeArchive  = "archive"
	TypeScaffold = "scaffold"
	TypeUser     = "user"
	TypeGroup    = "group"
	// TypeApply runs a child manifest; it exists only inside manifests.
	TypeApply = "apply"
)

// Types lists every resource type name the protocol knows, in documentation order.
var Types = []string{TypeApply, TypeArchive, TypeExec, TypeFile, TypeGroup, TypePackage, TypeScaffold, TypeService, TypeUser}
