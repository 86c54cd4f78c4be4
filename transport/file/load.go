// SPDX-License-Identifier: Apache-2.0

package file

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	// The resource types whose messages (and the messages nested in them
	// as Any, such as HttpConnectionManager) a JSON, YAML or text file may
	// name are the client's built-in types, linked by this import.
	"github.com/proxyless/xds/internal/recvlimit"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"
)

// ErrUnsupportedFormat is wrapped by the error for a file whose extension
// is none of .json, .yaml, .yml, .textpb, .txtpb and .pb.
var ErrUnsupportedFormat = errors.New("unsupported file extension")

// ErrFileTooLarge is wrapped by the error for a file larger than the
// limit (WithMaxFileBytes, else the client's, else DefaultMaxFileBytes,
// 4 MiB), which names the file, its size, the limit and the option that
// raises it. The file is not read. It wraps
// transport.ErrMessageTooLarge: the client reports it as it reports a
// response above its receive limit.
var ErrFileTooLarge = fmt.Errorf("file too large: %w", transport.ErrMessageTooLarge)

// Resolver finds the message types of the Any values in JSON, YAML and
// text files. protoregistry.GlobalTypes (the default) knows every message
// linked into the program, which includes the client's built-in resource
// types; custom resource types must be linked too.
type Resolver interface {
	protoregistry.ExtensionTypeResolver
	protoregistry.MessageTypeResolver
}

// parse decodes the DiscoveryResponse in b, of the format named by the
// extension of path.
func parse(path string, b []byte, r Resolver) (*v3discoverypb.DiscoveryResponse, error) {
	resp := &v3discoverypb.DiscoveryResponse{}
	var err error
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".json":
		err = protojson.UnmarshalOptions{Resolver: r}.Unmarshal(b, resp)
	case ".yaml", ".yml":
		var j []byte
		if j, err = yaml.YAMLToJSON(b); err == nil {
			err = protojson.UnmarshalOptions{Resolver: r}.Unmarshal(j, resp)
		}
	case ".textpb", ".txtpb":
		err = prototext.UnmarshalOptions{Resolver: r}.Unmarshal(b, resp)
	case ".pb":
		err = proto.Unmarshal(b, resp)
	default:
		return nil, fmt.Errorf("%s: %w %q", path, ErrUnsupportedFormat, ext)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: parsing DiscoveryResponse: %w", path, err)
	}
	if resp.GetTypeUrl() == "" {
		return nil, fmt.Errorf("%s: DiscoveryResponse has no type_url", path)
	}
	return resp, nil
}

// supported reports whether the name of a directory entry is a file to
// load: a supported extension, and not hidden (Kubernetes ConfigMap
// volumes keep their internals in "..data" and friends).
func supported(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json", ".yaml", ".yml", ".textpb", ".txtpb", ".pb":
		return true
	}
	return false
}

// snapshot is the content of the source at one load: one response per
// type URL.
type snapshot struct {
	digest string                                      // of every file's bytes; equal digests, equal snapshots
	byType map[string]*v3discoverypb.DiscoveryResponse // version_info set; nonce not
	names  map[string][]string                         // type URL → name of each resource of byType, "" when unknown; nil for types not built in
	types  []string                                    // sorted keys of byType
}

// loader reads a file, or every supported file of a directory, into a
// snapshot. It remembers the type URL of each file, so that a file
// replaced by one of another type is an error rather than the deletion of
// every resource of the old type. Not safe for concurrent use.
type loader struct {
	// Initialized at creation time and read-only afterwards.
	path     string
	resolver Resolver
	limit    recvlimit.Limit // the largest file read
	logger   *slog.Logger

	typeOf  map[string]string // file path → type URL of its first good load
	skipped map[string]bool   // files of the directory skipped by the last load, warned about once
}

// files returns the files of the source, sorted. For a directory, only
// its regular files (symbolic links followed) are returned; other files
// of supported names (FIFOs, devices, sockets) are skipped with a warning,
// once per file. The source itself, when not a directory, is returned
// whatever its type: reading it fails unless it is a regular file.
func (l *loader) files() ([]string, error) {
	fi, err := os.Stat(l.path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{l.path}, nil
	}
	entries, err := os.ReadDir(l.path)
	if err != nil {
		return nil, err
	}
	var files []string
	skipped := make(map[string]bool)
	for _, e := range entries {
		if !supported(e.Name()) || e.IsDir() {
			continue
		}
		f := filepath.Join(l.path, e.Name())
		mode := e.Type()
		if mode&fs.ModeSymlink != 0 {
			fi, err := os.Stat(f) // never blocks, whatever f is
			if err != nil {
				return nil, err
			}
			mode = fi.Mode().Type()
		}
		switch {
		case mode.IsRegular():
			files = append(files, f)
		case mode.IsDir():
		default:
			l.skip(skipped, f, mode)
		}
	}
	l.skipped = skipped
	return files, nil
}

// skip records that the load skips file f, of the given type, warning
// about it unless the previous load skipped it too.
func (l *loader) skip(skipped map[string]bool, f string, mode fs.FileMode) {
	skipped[f] = true
	if !l.skipped[f] {
		l.logger.Warn("file: skipping a file of the source that is not a regular file", xdslog.KeyFile, f, xdslog.KeyMode, mode.Type().String())
	}
}

// notRegularError is readFile's error for a file that is not a regular
// file.
type notRegularError struct {
	file string
	mode fs.FileMode
}

func (e *notRegularError) Error() string {
	return fmt.Sprintf("%s: not a regular file (mode %s)", e.file, e.mode.Type())
}

// readFile returns the content of the regular file f, which must hold at
// most limit bytes. It never blocks on a file that is not regular: f is
// opened non-blocking (a FIFO without a writer opens at once) and checked
// with fstat before it is read, so that a FIFO or device put in the place
// of a regular file between the listing and the open is not read either.
// The error names f, and the limit when f is larger.
func readFile(f string, limit recvlimit.Limit) ([]byte, error) {
	fd, err := os.OpenFile(f, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f, err)
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &notRegularError{file: f, mode: fi.Mode()}
	}
	if fi.Size() > limit.Bytes {
		return nil, fmt.Errorf("%s: %w: %d bytes, over the limit of %d bytes (%s)", f, ErrFileTooLarge, fi.Size(), limit.Bytes, limit.Hint)
	}
	b, err := io.ReadAll(io.LimitReader(fd, limit.Bytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f, err)
	}
	if int64(len(b)) > limit.Bytes { // it grew since fstat
		return nil, fmt.Errorf("%s: %w: over the limit of %d bytes (%s)", f, ErrFileTooLarge, limit.Bytes, limit.Hint)
	}
	return b, nil
}

// load reads the source. Any unreadable or unparsable file, a file larger
// than the limit, or a file whose type URL changed, fails the whole load:
// a snapshot is all of the source or nothing. A file of the directory
// that became something else than a regular file since the listing is
// skipped with a warning, as if it had not been listed. load stops with
// ctx's error between two files when ctx ends.
func (l *loader) load(ctx context.Context) (*snapshot, error) {
	files, err := l.files()
	if err != nil {
		return nil, fmt.Errorf("file: reading %s: %w", l.path, err)
	}
	h := sha256.New()
	type part struct {
		file string
		resp *v3discoverypb.DiscoveryResponse
	}
	var parts []part
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("file: reading %s: %w", l.path, err)
		}
		b, err := readFile(f, l.limit)
		if nr := (*notRegularError)(nil); errors.As(err, &nr) && f != l.path {
			l.skip(l.skipped, f, nr.mode) // replaced since the listing
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
		resp, err := parse(f, b, l.resolver)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		if was, ok := l.typeOf[f]; ok && was != resp.GetTypeUrl() {
			return nil, fmt.Errorf("file: %s: type_url changed from %q to %q; a file keeps the type it was first loaded with", f, was, resp.GetTypeUrl())
		}
		parts = append(parts, part{f, resp})
	}
	s := &snapshot{digest: hex.EncodeToString(h.Sum(nil)), byType: make(map[string]*v3discoverypb.DiscoveryResponse), names: make(map[string][]string)}
	contributors := make(map[string]int)
	for _, p := range parts {
		l.typeOf[p.file] = p.resp.GetTypeUrl()
		t := p.resp.GetTypeUrl()
		contributors[t]++
		merged := s.byType[t]
		if merged == nil {
			merged = &v3discoverypb.DiscoveryResponse{TypeUrl: t, VersionInfo: p.resp.GetVersionInfo()}
			s.byType[t] = merged
		}
		merged.Resources = append(merged.Resources, p.resp.GetResources()...)
	}
	for t, resp := range s.byType {
		if contributors[t] > 1 || resp.VersionInfo == "" {
			resp.VersionInfo = versionOf(resp.GetResources())
		}
		s.types = append(s.types, t)
		s.names[t] = namesOf(t, resp.GetResources())
	}
	slices.Sort(s.types)
	return s, nil
}

// namesOf returns the resource name of each of res, "" where it cannot
// tell, or nil when typeURL is not a built-in type.
func namesOf(typeURL string, res []*anypb.Any) []string {
	var typ resources.ResourceType
	for _, t := range resources.BuiltinTypes() {
		if t.TypeURL() == typeURL {
			typ = t
		}
	}
	if typ == nil {
		return nil
	}
	names := make([]string, len(res))
	for i, a := range res {
		if inner, err := resources.Unwrap(a); err == nil {
			names[i], _ = typ.Name(inner)
		}
	}
	return names
}

// versionOf returns a version_info that changes with the resources:
// "sha256:" and the first 16 hex digits of their serialized digest.
func versionOf(res []*anypb.Any) string {
	h := sha256.New()
	for _, a := range res {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(a)
		fmt.Fprintf(h, "%d\x00", len(b))
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}
