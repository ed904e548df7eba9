package sandbox

import (
	"context"
	"iter"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// Drive is persistent storage that outlives sandboxes: mount it at create
// (CreateParams.Mounts) or update (UpdateParams.Mounts), read-write or as a
// read-only snapshot of its current content.
type Drive struct {
	ID        string
	Name      string
	ProjectID string
	Region    string
	// MaxSize is the largest the drive may grow, in bytes.
	MaxSize int64
	// CurrentSessionID and CurrentSandboxName name the sandbox that has
	// the drive mounted read-write, if any.
	CurrentSessionID   string
	CurrentSandboxName string
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// Mount mounts the drive read-write; one sandbox at a time may.
func (d Drive) Mount() Mount { return Mount{Drive: d.Name, Mode: "read-write"} }

// SnapshotMount mounts the drive as a read-only snapshot of its content,
// which any number of sandboxes may.
func (d Drive) SnapshotMount() Mount { return Mount{Drive: d.Name, Mode: "snapshot"} }

func driveFromWire(w *wire.Drive) Drive {
	return Drive{
		ID: w.ID, Name: w.Name, ProjectID: w.ProjectID, Region: w.Region, MaxSize: w.MaxSizeBytes,
		CurrentSessionID: w.CurrentSessionID, CurrentSandboxName: w.CurrentSandboxName,
		CreatedAt: wire.Time(w.CreatedAt), UpdatedAt: wire.Time(w.UpdatedAt),
	}
}

// DriveParams configure a drive made by GetOrCreateDrive. They do not
// change a drive that exists.
type DriveParams struct {
	// Region is where the data is stored; empty means the API's default.
	Region string
	// MaxSize in bytes; 0 means the API's default.
	MaxSize int64
}

func validateDriveName(name string) error {
	switch {
	case name == "":
		return apierr.Invalid("name", "empty")
	case len(name) > 255:
		return apierr.Invalid("name", "%d bytes, the maximum is 255", len(name))
	case strings.ContainsAny(name, "/\\") || strings.IndexFunc(name, unicode.IsControl) >= 0:
		return apierr.Invalid("name", "%q contains a slash or a control character", name)
	}
	return nil
}

func drivePath(name string) string { return "/v2/sandboxes/drives/" + url.PathEscape(name) }

// GetOrCreateDrive returns the drive called name, creating it with p when
// it does not exist. Asking twice is safe, so the call is retried.
func (c *Client) GetOrCreateDrive(ctx context.Context, name string, p DriveParams) (Drive, error) {
	if err := validateDriveName(name); err != nil {
		return Drive{}, err
	}
	if p.MaxSize < 0 {
		return Drive{}, apierr.Invalid("MaxSize", "negative size %d", p.MaxSize)
	}
	project, err := c.project(ctx)
	if err != nil {
		return Drive{}, err
	}
	body := wire.DriveRequest{ProjectID: project, Region: p.Region}
	if p.MaxSize > 0 {
		body.MaxSizeBytes = &p.MaxSize
	}
	var out wire.DriveResponse
	// Get-or-create by name: a repeat finds what the first attempt made.
	err = c.core.JSON(ctx, &httpcore.Call{Method: "POST", Path: drivePath(name), JSON: body,
		Safety: httpcore.Idempotent, Op: "get or create drive"}, &out)
	if err != nil {
		return Drive{}, err
	}
	return driveFromWire(&out.Drive), nil
}

// GetDrive returns the drive called name. A missing drive gives an error
// matching ErrNotFound.
func (c *Client) GetDrive(ctx context.Context, name string) (Drive, error) {
	return c.driveCall(ctx, "GET", name, "get drive")
}

// DeleteDrive deletes a drive and all its data, and returns its last
// state. The drive must not be mounted read-write by a running sandbox
// (the API answers with an error matching ErrConflict or ErrBadRequest).
func (c *Client) DeleteDrive(ctx context.Context, name string) (Drive, error) {
	return c.driveCall(ctx, "DELETE", name, "delete drive")
}

func (c *Client) driveCall(ctx context.Context, method, name, op string) (Drive, error) {
	if err := validateDriveName(name); err != nil {
		return Drive{}, err
	}
	project, err := c.project(ctx)
	if err != nil {
		return Drive{}, err
	}
	var out wire.DriveResponse
	err = c.core.JSON(ctx, &httpcore.Call{Method: method, Path: drivePath(name), Query: projectQuery("projectId", project),
		Safety: httpcore.Idempotent, Op: op}, &out)
	if err != nil {
		return Drive{}, err
	}
	return driveFromWire(&out.Drive), nil
}

// DriveListParams narrow and order ListDrives.
type DriveListParams struct {
	// NamePrefix keeps the drives whose name starts with it.
	NamePrefix string
	// SortBy is "createdAt" (the default) or "name".
	SortBy string
	// PageSize is how many drives one request fetches (1–50; 0: the API's
	// default).
	PageSize  int
	Ascending bool
}

// ListDrives iterates over the project's drives, fetching pages as the
// loop goes on. An error ends the iteration.
func (c *Client) ListDrives(ctx context.Context, p DriveListParams) iter.Seq2[Drive, error] {
	return func(yield func(Drive, error) bool) {
		if p.PageSize < 0 || p.PageSize > 50 {
			yield(Drive{}, apierr.Invalid("PageSize", "must be 1–50, got %d", p.PageSize))
			return
		}
		if p.SortBy != "" && p.SortBy != "createdAt" && p.SortBy != "name" {
			yield(Drive{}, apierr.Invalid("SortBy", "must be \"createdAt\" or \"name\", got %q", p.SortBy))
			return
		}
		project, err := c.project(ctx)
		if err != nil {
			yield(Drive{}, err)
			return
		}
		q := projectQuery("projectId", project)
		for k, v := range map[string]string{"namePrefix": p.NamePrefix, "sortBy": p.SortBy} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if p.PageSize > 0 {
			q.Set("limit", strconv.Itoa(p.PageSize))
		}
		if p.Ascending {
			q.Set("sortOrder", "asc")
		}
		call := &httpcore.Call{Method: "GET", Path: "/v2/sandboxes/drives", Query: q, Safety: httpcore.Idempotent, Op: "list drives"}
		for w, err := range pages(ctx, c, call, func(r *wire.ListDrivesResponse) ([]wire.Drive, *string) { return r.Drives, r.Pagination.Next }) {
			if err != nil {
				yield(Drive{}, err)
				return
			}
			if !yield(driveFromWire(&w), nil) {
				return
			}
		}
	}
}
