package wire

// Drive is a drive as the API reports it.
type Drive struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	ProjectID          string `json:"projectId"`
	Region             string `json:"region"`
	MaxSizeBytes       int64  `json:"maxSizeBytes"`
	CurrentSessionID   string `json:"currentSessionId,omitempty"`
	CurrentSandboxName string `json:"currentSandboxName,omitempty"`
	CreatedAt          int64  `json:"createdAt"`
	UpdatedAt          int64  `json:"updatedAt"`
}

// DriveRequest is the body of POST /v2/sandboxes/drives/{name}, which
// returns the drive of that name, creating it when missing.
type DriveRequest struct {
	ProjectID    string `json:"projectId,omitempty"`
	Region       string `json:"region,omitempty"`
	MaxSizeBytes *int64 `json:"maxSizeBytes,omitempty"`
}

// DriveResponse answers GET, POST and DELETE /v2/sandboxes/drives/{name}.
type DriveResponse struct {
	Drive Drive `json:"drive"`
}

// ListDrivesResponse is one page of GET /v2/sandboxes/drives.
type ListDrivesResponse struct {
	Drives     []Drive    `json:"drives"`
	Pagination Pagination `json:"pagination"`
}

// SnapshotTreeNode is one snapshot of a tree answer, with the other
// children of its parent. Count is a decimal string.
type SnapshotTreeNode struct {
	Snapshot Snapshot   `json:"snapshot"`
	Siblings []Snapshot `json:"siblings"`
	Count    string     `json:"count"`
}

// SnapshotTreeResponse answers GET /v2/sandboxes/snapshots/tree.
// Pagination.Next is a snapshot id to pass as the next snapshotId.
type SnapshotTreeResponse struct {
	Snapshots  []SnapshotTreeNode `json:"snapshots"`
	Anchor     *SnapshotTreeNode  `json:"anchor,omitempty"`
	Pagination Pagination         `json:"pagination"`
}
