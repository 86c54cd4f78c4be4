// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// This file renders the structured output formats. Every command builds
// its JSON form first; YAML is that JSON re-encoded, so the two always
// carry the same fields in the same order.
//
// The output contract, the same for every command (demo, watch, resolve,
// status, validate):
//
//   - -o json writes one JSON object per line and nothing else on stdout:
//     one record (an event, a configuration, a dump, a verdict) per line,
//     so that `jq -c`, `while read` and line-based tools work. Messages for
//     people go to stderr.
//   - -o yaml writes the same records as a YAML stream, one document per
//     record, each starting with "---".
//   - Every key is snake_case: xdsctl's own fields ("type_url",
//     "route_config") and the protos it prints (CSDS ClientConfig,
//     resources) alike, which are rendered with protojson's proto field
//     names (protoJSON), not its lowerCamelCase JSON names. The proto
//     field names are what the xDS documentation, the Envoy API reference
//     and validate's field paths ("virtual_hosts[0].routes[0]") use, so
//     a path read in an error is the path to query in the output; and
//     protojson reads either spelling back, so the output is still
//     valid protojson input. The only other keys are "@type" (protojson's
//     Any) and keys that are data (google.protobuf.Struct fields,
//     metadata filter names).

// encodeRecord renders one record of a command's output (v is encoded
// with encoding/json, or is already JSON when it is a json.RawMessage) in
// format out: JSON on one line, or a YAML document starting with "---".
// Both end with a newline, so a stream of records is one JSON value per
// line or a multi-document YAML stream.
func encodeRecord(out outputFormat, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("rendering JSON: %w", err)
	}
	if out != outputYAML {
		return append(b, '\n'), nil
	}
	y, err := jsonToYAML(b)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), y...), nil
}

// jsonToYAML re-encodes one JSON value as block-style YAML, keeping the
// order of object members, indented by two spaces.
func jsonToYAML(j []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(j, &n); err != nil {
		return nil, fmt.Errorf("rendering YAML: %w", err)
	}
	blockStyle(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, fmt.Errorf("rendering YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("rendering YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// blockStyle clears the flow and quoting styles JSON input gives every
// node, so that the encoder writes block collections and quotes only the
// strings that need it (a string "true" or "1" stays quoted: the node
// keeps its !!str tag).
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}
