package protocol

// ApplyState is the state of an apply resource: how many resources its
// child manifest held, and how many of them changed (under noop: would
// change) and failed. The fields carry CCM's names.
type ApplyState struct {
	CommonState
	ResourceCount int `json:"resource_count"`
	ChangedCount  int `json:"changed_count"`
	FailedCount   int `json:"failed_count"`
}
