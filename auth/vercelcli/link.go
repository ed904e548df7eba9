package vercelcli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/sbx-go/vercel-sandbox/auth/internal/errmsg"
	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
)

// projectLink is what `vercel link` writes into .vercel/project.json.
type projectLink struct {
	ProjectID string
	OrgID     string
}

// findProjectRoot walks up from the working directory to the first
// directory that contains a .vercel entry. The filesystem root itself is not
// checked, as in the TypeScript SDK.
func findProjectRoot(sys host.System) (string, error) {
	dir, err := sys.Wd()
	if err != nil {
		return "", &errmsg.Error{Msg: "cannot find the linked project", Sentinel: ErrProjectNotLinked, Cause: err}
	}
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		if _, err := sys.Files().Stat(filepath.Join(dir, ".vercel")); err == nil {
			return dir, nil
		}
		dir = parent
	}
	return "", &errmsg.Error{
		Msg:      "Unable to find project root directory. Have you linked your project with `vc link?`",
		Sentinel: ErrProjectNotLinked,
	}
}

// readProjectLink reads .vercel/project.json of the linked project.
func readProjectLink(sys host.System) (projectLink, error) {
	root, err := findProjectRoot(sys)
	if err != nil {
		return projectLink{}, err
	}
	data, err := sys.Files().ReadFile(filepath.Join(root, ".vercel", "project.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return projectLink{}, &errmsg.Error{
			Msg:      "project.json not found, have you linked your project with `vc link?`",
			Sentinel: ErrProjectNotLinked,
		}
	}
	if err != nil {
		return projectLink{}, &errmsg.Error{Msg: "cannot read .vercel/project.json", Sentinel: ErrProjectNotLinked, Cause: err}
	}
	var raw map[string]any
	if json.Unmarshal(data, &raw) != nil {
		return projectLink{}, &errmsg.Error{Msg: "cannot parse .vercel/project.json; try running `vc link` to re-link your project", Sentinel: ErrProjectNotLinked}
	}
	p, pok := raw["projectId"].(string)
	o, ook := raw["orgId"].(string)
	if !pok && !ook {
		return projectLink{}, &errmsg.Error{
			Msg:      "Expected a string-valued projectId property. Try running `vc link` to re-link your project.",
			Sentinel: ErrProjectNotLinked,
		}
	}
	return projectLink{ProjectID: p, OrgID: o}, nil
}

// resolveTarget decides which project and team to mint a token for:
// explicit values first, then the ones passed by the provider (from the
// current token's claims), then .vercel/project.json. Whatever their
// origin, ids that validID rejects are refused with ErrInvalidID.
func resolveTarget(sys host.System, explicitProject, explicitTeam, project, team string) (string, string, error) {
	project = cmp.Or(explicitProject, project)
	team = cmp.Or(explicitTeam, team)
	if project == "" || team == "" {
		link, err := readProjectLink(sys)
		if err != nil && project == "" {
			return "", "", err
		}
		project = cmp.Or(project, link.ProjectID)
		team = cmp.Or(team, link.OrgID)
	}
	if project == "" {
		return "", "", &errmsg.Error{
			Msg:      "Failed to refresh OIDC token: No project specified. Try re-linking your project with `vc link`",
			Sentinel: ErrProjectNotLinked,
		}
	}
	if err := checkIDs(project, team); err != nil {
		return "", "", err
	}
	return project, team, nil
}

// checkIDs refuses a project or team (when set) that validID rejects.
func checkIDs(project, team string) error {
	if !validID(project) {
		return fmt.Errorf("%w: project %q", ErrInvalidID, project)
	}
	if team != "" && !validID(team) {
		return fmt.Errorf("%w: team %q", ErrInvalidID, team)
	}
	return nil
}

// validID reports whether id matches ^[A-Za-z0-9][A-Za-z0-9._-]*$, so that
// it is safe to pass as a command-line argument or to use as a file name.
func validID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}
