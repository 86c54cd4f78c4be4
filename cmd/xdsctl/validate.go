// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/proxyless/xds/resources"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

var validateCommand = &command{
	name:     "validate",
	synopsis: "[--bootstrap FILE] [-o text|json|yaml] FILE...",
	summary:  "check resources offline, as a gRPC client would on receiving them",
	help: `Validate decodes and validates xDS resources exactly as this library's
client does when a management server sends them (the rules of gRPC's xDS
clients), without a server: lint a control plane's output in CI.

Each FILE ("-" for standard input) holds one of:
  - a resource as a google.protobuf.Any: protojson with its "@type", the
    same in YAML, proto text, or binary;
  - a DiscoveryResponse in any of those formats, whose resources are each
    checked: the files --file reads;
  - in JSON, several of the above one after the other, or in an array; in
    YAML, several documents.
The extension names the format, as for --file: .json, .yaml or .yml,
.textpb or .txtpb, .pb; with another name, or on standard input, it is
recognised from the content. Resources may be inside an
envoy.service.discovery.v3.Resource wrapper.

It prints one verdict per resource:
  VALID <type> <name>
  INVALID <type> <name>: <field>: <reason>
With --output json it prints one JSON object per resource and line, with
the fields file, index, type_url, type, name, valid, and for an invalid
resource error, and field and reason when a field is at fault; with
--output yaml, the same as YAML documents.

With --bootstrap FILE, resources are also checked against that
bootstrap, as a client using it would: the certificate provider
instances a Cluster's transport socket names must be in its
certificate_providers (gRFC A29). Without it, instance names are not
checked.

JSON input names the types inside Any fields ("@type"). An Any whose type
xdsctl does not link (an Envoy extension gRPC does not use, or your own)
is read as that type URL with an opaque value, which is all gRPC looks at
for a type it does not support: an optional HTTP filter of such a type is
accepted, a required one rejected, as a gRPC client would.

Exit status: 0 when every resource is valid, 1 when any is invalid, 2 when
an input cannot be read.
`,
	setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		out := registerOutput(fs)
		bootstrapFile := fs.String("bootstrap", "", "check the resources against this gRPC xDS bootstrap `file` too (its certificate_providers); default: none")
		return func(_ context.Context, e *env, args []string) error {
			var opts []resources.DecodeOption
			if *bootstrapFile != "" {
				cfg, err := loadBootstrap(*bootstrapFile)
				if err != nil {
					return err
				}
				opts = append(opts, resources.WithCertificateProviderInstances(cfg.CertificateProviderNames()...))
			}
			return runValidate(e, *out, args, opts...)
		}
	},
}

// verdict is the result for one resource of an input file.
type verdict struct {
	file  string
	index int // position of the resource in the file, from 0
	resources.Verdict
}

// jsonVerdict is one line of `validate --output json`.
type jsonVerdict struct {
	File    string `json:"file"`
	Index   int    `json:"index"`
	TypeURL string `json:"type_url"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Valid   bool   `json:"valid"`
	Error   string `json:"error,omitempty"`
	Field   string `json:"field,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func runValidate(e *env, out outputFormat, files []string, opts ...resources.DecodeOption) error {
	if len(files) == 0 {
		return usageErrorf("no FILE given")
	}
	var (
		unreadable []string
		total, bad int
	)
	for _, f := range files {
		rs, err := readResources(f)
		if err != nil {
			// Keep going, so that one bad file does not hide the verdicts
			// on the others; exit 2 at the end.
			unreadable = append(unreadable, oneLine(err.Error()))
			continue
		}
		for i, r := range rs {
			v := verdict{file: f, index: i, Verdict: resources.Check(r, opts...)}
			total++
			if v.Err != nil {
				bad++
			}
			if err := writeVerdict(e.stdout, out, v); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
		}
	}
	switch {
	case len(unreadable) > 0:
		for _, msg := range unreadable[:len(unreadable)-1] {
			fmt.Fprintf(e.stderr, "xdsctl: validate: %s\n", msg)
		}
		return &usageError{errors.New(unreadable[len(unreadable)-1])}
	case bad > 0:
		return fmt.Errorf("%d of %d resources are invalid", bad, total)
	}
	return nil
}

// writeVerdict prints v as one line of text or JSON.
func writeVerdict(w io.Writer, out outputFormat, v verdict) error {
	typ := v.TypeName
	if typ == "" {
		typ = v.TypeURL
		if typ == "" {
			typ = "(unknown type)"
		}
	}
	name := v.Name
	if name == "" {
		name = "(unnamed)"
	}
	if out.structured() {
		jv := jsonVerdict{File: v.file, Index: v.index, TypeURL: v.TypeURL, Type: v.TypeName, Name: v.Name, Valid: v.Err == nil}
		if v.Err != nil {
			jv.Error = v.Err.Error()
			var ve *resources.ValidationError
			if errors.As(v.Err, &ve) {
				jv.Field, jv.Reason = ve.Field, ve.Reason
			}
		}
		b, err := encodeRecord(out, jv)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if v.Err == nil {
		_, err := fmt.Fprintf(w, "VALID %s %s\n", typ, name)
		return err
	}
	_, err := fmt.Fprintf(w, "INVALID %s %s: %s\n", typ, name, oneLine(v.Err.Error()))
	return err
}

// readResources reads the resources of file ("-" is standard input),
// whatever its encoding.
func readResources(file string) ([]*anypb.Any, error) {
	var (
		data []byte
		err  error
	)
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err // it names the file
	}
	rs, err := parseResources(file, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return rs, nil
}

// parseResources finds the resources in data, each an Any or a
// DiscoveryResponse, in the format the extension of file names, as --file
// (package transport/file) reads them: .json protojson (one or more
// values, or arrays of them), .yaml or .yml the same in YAML (one or more
// documents), .textpb or .txtpb proto text, .pb binary. Any other name
// (standard input, "-") is recognised by its content: JSON, proto text,
// binary, or else YAML.
func parseResources(file string, data []byte) ([]*anypb.Any, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("empty input")
	}
	switch strings.ToLower(filepath.Ext(file)) {
	case ".json":
		return parseJSON(trimmed)
	case ".yaml", ".yml":
		return parseYAML(data)
	case ".textpb", ".txtpb":
		return parseText(data)
	case ".pb":
		return parseBinary(data)
	}
	switch {
	case trimmed[0] == '{' || trimmed[0] == '[':
		return parseJSON(trimmed)
	case utf8.Valid(data):
		rs, textErr := parseText(data)
		if textErr == nil {
			return rs, nil
		}
		// Binary data can be valid UTF-8 too.
		if rs, err := parseBinary(data); err == nil {
			return rs, nil
		}
		if rs, err := parseYAML(data); err == nil {
			return rs, nil
		}
		return nil, textErr
	default:
		return parseBinary(data)
	}
}

// parseYAML reads YAML: each document is converted to JSON as --file
// converts its YAML files (sigs.k8s.io/yaml), then read as parseJSON
// reads it.
func parseYAML(data []byte) ([]*anypb.Any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*anypb.Any
	for n := 0; ; n++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); err == io.EOF {
			if n == 0 {
				return nil, errors.New("no YAML document")
			}
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("YAML document %d: %w", n, err)
		}
		y, err := yaml.Marshal(&doc)
		if err != nil {
			return nil, fmt.Errorf("YAML document %d: %w", n, err)
		}
		j, err := sigsyaml.YAMLToJSON(y)
		if err != nil {
			return nil, fmt.Errorf("YAML document %d: %w", n, err)
		}
		rs, err := parseJSON(j)
		if err != nil {
			return nil, fmt.Errorf("YAML document %d: %w", n, err)
		}
		out = append(out, rs...)
	}
}

// discoveryResponseTypeURL is the type URL of a DiscoveryResponse in an Any.
const discoveryResponseTypeURL = "type.googleapis.com/envoy.service.discovery.v3.DiscoveryResponse"

// expand returns the resources of a DiscoveryResponse given as an Any, or
// a itself.
func expand(a *anypb.Any) ([]*anypb.Any, error) {
	if a.GetTypeUrl() != discoveryResponseTypeURL {
		return []*anypb.Any{a}, nil
	}
	dr := &v3discoverypb.DiscoveryResponse{}
	if err := proto.Unmarshal(a.GetValue(), dr); err != nil {
		return nil, fmt.Errorf("decoding the DiscoveryResponse: %w", err)
	}
	return dr.GetResources(), nil
}

func parseJSON(data []byte) ([]*anypb.Any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []*anypb.Any
	for n := 0; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("JSON value %d: %w", n, err)
		}
		values := []json.RawMessage{raw}
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
			values = nil
			if err := json.Unmarshal(raw, &values); err != nil {
				return nil, fmt.Errorf("JSON value %d: %w", n, err)
			}
		}
		for i, v := range values {
			rs, err := parseJSONObject(v)
			if err != nil {
				if len(values) > 1 || bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
					return nil, fmt.Errorf("JSON value %d, element %d: %w", n, i, err)
				}
				return nil, fmt.Errorf("JSON value %d: %w", n, err)
			}
			out = append(out, rs...)
		}
	}
}

// parseJSONObject reads one protojson object: an Any (it has "@type") or a
// DiscoveryResponse.
func parseJSONObject(v json.RawMessage) ([]*anypb.Any, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(v, &probe); err != nil {
		return nil, err
	}
	if _, ok := probe["@type"]; ok {
		a := &anypb.Any{}
		if err := unmarshalOpaqueJSON(v, a); err != nil {
			return nil, err
		}
		return expand(a)
	}
	if _, ok := probe["resources"]; ok {
		dr := &v3discoverypb.DiscoveryResponse{}
		if err := unmarshalOpaqueJSON(v, dr); err != nil {
			return nil, err
		}
		return dr.GetResources(), nil
	}
	return nil, errors.New(`neither a resource with an "@type" nor a DiscoveryResponse with "resources"`)
}

func parseText(data []byte) ([]*anypb.Any, error) {
	a := &anypb.Any{}
	anyErr := prototext.Unmarshal(data, a)
	if anyErr == nil && a.GetTypeUrl() != "" {
		return expand(a)
	}
	dr := &v3discoverypb.DiscoveryResponse{}
	drErr := prototext.Unmarshal(data, dr)
	if drErr == nil {
		return dr.GetResources(), nil
	}
	if anyErr == nil {
		return nil, errors.New("proto text of an Any without a type_url")
	}
	return nil, fmt.Errorf("not proto text of an Any (%w) nor of a DiscoveryResponse (%w)", anyErr, drErr)
}

// parseBinary reads binary data: an Any whose type URL names a type
// xdsctl knows, or else a DiscoveryResponse (the two wire formats look
// alike, so the type URL decides).
func parseBinary(data []byte) ([]*anypb.Any, error) {
	a := &anypb.Any{}
	if err := proto.Unmarshal(data, a); err == nil && knownTypeURL(a.GetTypeUrl()) {
		return expand(a)
	}
	dr := &v3discoverypb.DiscoveryResponse{}
	if err := proto.Unmarshal(data, dr); err != nil {
		return nil, fmt.Errorf("not a binary Any or DiscoveryResponse: %w", err)
	}
	if len(dr.GetResources()) == 0 && dr.GetTypeUrl() == "" {
		return nil, errors.New("not a binary Any of a resource type, nor a DiscoveryResponse with resources")
	}
	return dr.GetResources(), nil
}

func knownTypeURL(u string) bool {
	if u == resources.ResourceWrapperTypeURL || u == discoveryResponseTypeURL {
		return true
	}
	for _, t := range resources.BuiltinTypes() {
		if t.TypeURL() == u {
			return true
		}
	}
	return strings.HasPrefix(u, "type.googleapis.com/envoy.config.")
}
