package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/internal/statefile"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
)

// The catalog cache keeps what each server offered at its last handshake
// (its answer to initialize, its tools, and the prompts, resources and
// resource templates it lists) in the workspace's state dir, one file per
// server, so that a lazy server's catalog is known before it runs: its hub
// answers initialize and these lists from it while the server is idle, so
// that an agent's lists at its start (Claude Code lists prompts and
// resources too when a server has them) start nothing. mcpgen build,
// which starts each server, fills it too.
//
// A catalog is kept under a key: a hash of what the manifest makes of the
// server's process (catalogKey). A catalog whose key is not the server's
// key now is never used: a changed command, argument, directory or
// variable answers from nothing rather than from the old catalog. The
// environment the launcher inherits is left out of the key, so that
// launchers started from different shells, and mcpgen build, share it;
// what a server lists may still depend on it, and a server whose catalog
// changed tells its clients (tools/list_changed) once it runs.

// catalogDir is the directory of the catalog files in a state dir.
const catalogDir = "catalog"

// maxCatalog bounds a catalog file, written and read: a server is hostile
// input too, and a catalog that big is not worth keeping.
const maxCatalog = 8 << 20

// catalogVersion is the format of the files; another is not read. The
// server's era came later, in members of their own that an earlier mcpgen
// skips: a file without them is a catalog whose era is not known.
const catalogVersion = 1

// A catalogFile is one server's catalog on disk. The lists besides tools
// are optional: absent, the list is not known (a file of an earlier
// mcpgen, a server that does not have it, a listing that failed), and a
// request for it starts the server.
type catalogFile struct {
	Version int       `json:"version"`
	Server  string    `json:"server"`
	Key     string    `json:"key"`
	SavedAt time.Time `json:"saved_at"`
	// Era is the server's era ("legacy", "modern"); absent when not known
	// (a file of an earlier mcpgen, which never asked).
	Era string `json:"era,omitempty"`
	// Initialize is the server's answer to initialize; a modern server's
	// discover result in that form (which an earlier mcpgen reads).
	Initialize json.RawMessage `json:"initialize"`
	// Discover is a modern server's answer to server/discover, as sent.
	Discover  json.RawMessage    `json:"discover,omitempty"`
	Tools     []json.RawMessage  `json:"tools"`
	Prompts   *[]json.RawMessage `json:"prompts,omitempty"`
	Resources *[]json.RawMessage `json:"resources,omitempty"`
	Templates *[]json.RawMessage `json:"resource_templates,omitempty"`
}

// A catalog is what a server offered: its answer to initialize (for a
// modern server, its discover result in that form: init.Era and
// init.Discover say which), its tools and its other lists (nil: not
// known).
type catalog struct {
	init  *mcp.InitializeResult
	tools []*mcp.Tool
	lists hub.Lists
}

// known is a list as a catalog file holds it: nil when it has none.
func known(l *[]json.RawMessage) []json.RawMessage {
	switch {
	case l == nil:
		return nil
	case *l == nil:
		return []json.RawMessage{} // known, and empty
	}
	return *l
}

// kept is a list as a catalog file holds it: absent when not known.
func kept(l []json.RawMessage) *[]json.RawMessage {
	if l == nil {
		return nil
	}
	return &l
}

// catalogKey is the key of server srv's catalog: a hash of the server's
// definition (as restartKey sums it up) and of its process as the manifest
// resolves it in context c (program, arguments, directory, and the
// variables that the manifest and the context set), without the inherited
// environment. spec and err are what serverSpec returned.
func catalogKey(m *manifest.Manifest, srv *manifest.Server, c *manifest.Context, spec *proc.Spec, base []string, err error) string {
	var own *proc.Spec
	if spec != nil {
		own = &proc.Spec{Path: spec.Path, Args: spec.Args, Dir: spec.Dir}
		env, envErr := m.Environ(srv, c, manifest.EnvLookup(base))
		if envErr != nil && err == nil {
			err = envErr
		}
		for _, v := range env {
			own.Env = append(own.Env, v.Name+"="+v.Value)
		}
		own.Env = append(own.Env,
			"\x00"+manifest.VarWorkspaceID+"="+c.WorkspaceID,
			"\x00"+manifest.VarWorkspaceDir+"="+c.WorkspaceDir,
			"\x00"+manifest.VarUserID+"="+c.UserID)
	}
	sum := sha256.Sum256([]byte(restartKey(srv, own, err)))
	return hex.EncodeToString(sum[:])
}

// remoteCatalogKey is the key of a remote server's catalog: a hash of
// what its session depends on (key: its definition, and a hash of its
// resolved url, headers and token), so that another url, tenant or token
// never answers from the old catalog.
func remoteCatalogKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// catalogPath is where server's catalog is kept in stateDir.
func catalogPath(stateDir, server string) string {
	return filepath.Join(stateDir, catalogDir, server+".json")
}

// loadCatalog reads server's catalog from stateDir: nil when there is none
// under key (none kept, another key). A file that cannot be read as a
// catalog (not a regular file, say a named pipe put in its place; too big;
// not JSON) is an error, for the log, and no catalog: it is replaced at the
// next handshake.
func loadCatalog(stateDir, server, key string) (*catalog, error) {
	path := catalogPath(stateDir, server)
	data, err := statefile.ReadFile(path, maxCatalog)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cf catalogFile
	if err := json.Unmarshal(data, &cf); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if cf.Version != catalogVersion || cf.Server != server || cf.Key != key {
		return nil, nil
	}
	era, ok := mcp.ParseEra(cf.Era)
	if !ok {
		return nil, fmt.Errorf("%s: unknown era %q", path, cf.Era)
	}
	cat := &catalog{}
	if era == mcp.EraModern {
		d, err := mcp.ParseDiscoverResult(cf.Discover)
		if err != nil {
			return nil, fmt.Errorf("%s: discover: %v", path, err)
		}
		cat.init = d.InitializeResult()
	} else {
		cat.init = &mcp.InitializeResult{}
		if err := json.Unmarshal(cf.Initialize, cat.init); err != nil {
			return nil, fmt.Errorf("%s: initialize: %v", path, err)
		}
		cat.init.Raw, cat.init.Era = cf.Initialize, era
	}
	for _, raw := range cf.Tools {
		t := &mcp.Tool{}
		if err := json.Unmarshal(raw, t); err != nil {
			return nil, fmt.Errorf("%s: tools: %v", path, err)
		}
		cat.tools = append(cat.tools, t)
	}
	cat.lists = hub.Lists{Prompts: known(cf.Prompts), Resources: known(cf.Resources), Templates: known(cf.Templates)}
	return cat, nil
}

// encodeCatalog is server's catalog file, as saveCatalog writes it.
func encodeCatalog(server, key string, cat *catalog, now time.Time) ([]byte, error) {
	cf := catalogFile{Version: catalogVersion, Server: server, Key: key, SavedAt: now.UTC(), Initialize: cat.init.Raw, Tools: []json.RawMessage{}}
	switch {
	case cat.init.Era == mcp.EraModern && cat.init.Discover != nil:
		cf.Era, cf.Discover = mcp.EraModern.String(), cat.init.Discover.Raw
	case cat.init.Era == mcp.EraLegacy:
		cf.Era = mcp.EraLegacy.String()
	}
	if len(cf.Initialize) == 0 {
		raw, err := json.Marshal(cat.init)
		if err != nil {
			return nil, err
		}
		cf.Initialize = raw
	}
	for _, t := range cat.tools {
		raw := t.Raw
		if len(raw) == 0 {
			var err error
			if raw, err = t.MarshalJSON(); err != nil {
				return nil, err
			}
		}
		cf.Tools = append(cf.Tools, raw)
	}
	cf.Prompts, cf.Resources, cf.Templates = kept(cat.lists.Prompts), kept(cat.lists.Resources), kept(cat.lists.Templates)
	data, err := json.MarshalWithOption(cf, json.DisableHTMLEscape())
	if err != nil {
		return nil, err
	}
	if len(data) > maxCatalog {
		return nil, fmt.Errorf("server %q: its catalog is more than %d bytes: not kept", server, maxCatalog)
	}
	return append(data, '\n'), nil
}

// saveCatalog keeps server's catalog in stateDir under key, atomically
// (a new file renamed over the old one), readable by the user alone.
func saveCatalog(stateDir, server, key string, cat *catalog) error {
	data, err := encodeCatalog(server, key, cat, time.Now())
	if err != nil {
		return err
	}
	return writeCatalog(stateDir, server, data)
}

func writeCatalog(stateDir, server string, data []byte) error {
	dir := filepath.Join(stateDir, catalogDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("catalog cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+server+".*.tmp")
	if err != nil {
		return fmt.Errorf("catalog cache: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("catalog cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("catalog cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), catalogPath(stateDir, server)); err != nil {
		return fmt.Errorf("catalog cache: %w", err)
	}
	return nil
}

// A catalogCache is a session's catalog cache, in its state dir.
type catalogCache struct {
	dir  string // the state dir; set by Run, before any server exists
	log  *slog.Logger
	mu   sync.Mutex
	kept map[string][32]byte // a sum of each server's catalog as kept last (keep); guarded by mu
}

// keep keeps server's catalog in the cache under key, unless it is what
// was kept last: a server that offers the same catalog at every start is
// written once per session.
func (cc *catalogCache) keep(server, key string, cat *catalog) {
	h := sha256.New()
	h.Write([]byte(key))
	fmt.Fprintf(h, "\x00%v\x00", cat.init.Era)
	h.Write(cat.init.Raw)
	if d := cat.init.Discover; d != nil {
		h.Write(d.Raw)
	}
	for _, t := range cat.tools {
		h.Write([]byte{0})
		h.Write(t.Raw)
	}
	for i, l := range [][]json.RawMessage{cat.lists.Prompts, cat.lists.Resources, cat.lists.Templates} {
		fmt.Fprintf(h, "\x01%d:%t", i, l != nil)
		for _, item := range l {
			h.Write([]byte{0})
			h.Write(item)
		}
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	cc.mu.Lock()
	same := cc.kept[server] == sum
	cc.mu.Unlock()
	if same {
		return
	}
	if err := saveCatalog(cc.dir, server, key, cat); err != nil {
		cc.log.Warn("keeping the server's catalog", "server", server, "error", err)
		return
	}
	cc.mu.Lock()
	cc.kept[server] = sum
	cc.mu.Unlock()
}

// cached returns server's catalog kept under key, or nil. One that cannot
// be read is refused, with a log line, and taken for none: the server's
// requests start it, and its next handshake keeps a new one.
func (cc *catalogCache) cached(server, key string) *catalog {
	cat, err := loadCatalog(cc.dir, server, key)
	if err != nil {
		cc.log.Warn(refusedCatalog, "server", server, "error", err)
		return nil
	}
	return cat
}

// refusedCatalog is the log message of a kept catalog that cannot be read.
const refusedCatalog = "refusing the server's kept catalog: its requests start it, and its next handshake keeps a new one"

// keepProbed keeps the catalog of a server that Probe made ready, in the
// cache of workspace c.WorkspaceID, under the key its launcher computes.
func keepProbed(m *manifest.Manifest, s *manifest.Server, c *manifest.Context, spec *proc.Spec, base []string, cat *catalog) error {
	dir, err := StateDir(c.WorkspaceID)
	if err != nil {
		return err
	}
	return saveCatalog(dir, s.Name, catalogKey(m, s, c, spec, base, nil), cat)
}
