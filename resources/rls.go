// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// rlsPluginTypeURL is the type of the route lookup cluster specifier
// plugin's config, the only plugin gRPC supports ("RLS in xDS" design).
const rlsPluginTypeURL = "type.googleapis.com/grpc.lookup.v1.RouteLookupClusterSpecifier"

// The field numbers of grpc.lookup.v1 (grpc/lookup/v1/rls_config.proto).
// The generated Go types live in an internal grpc-go package, so the few
// fields gRPC validates are read from the wire.
const (
	rlsSpecifierConfig = 1 // RouteLookupClusterSpecifier.route_lookup_config

	rlsConfigGrpcKeybuilders = 2 // RouteLookupConfig
	rlsConfigLookupService   = 3
	rlsConfigTimeout         = 4
	rlsConfigMaxAge          = 5
	rlsConfigStaleAge        = 6
	rlsConfigCacheSizeBytes  = 7

	rlsKBNames        = 1 // GrpcKeyBuilder
	rlsKBHeaders      = 2
	rlsKBExtraKeys    = 3
	rlsKBConstantKeys = 4

	rlsNameService = 1 // GrpcKeyBuilder.Name
	rlsNameMethod  = 2

	rlsMatcherKey      = 1 // NameMatcher
	rlsMatcherRequired = 3

	rlsMapKey = 1 // map entries
)

// checkRLSPluginConfig validates a RouteLookupClusterSpecifier as grpc-go's
// RLS LB policy parses its route_lookup_config: at least one
// grpc_keybuilder; each with at least one name, every name with a service
// and a method without '/', no name twice; no required_match; no key used
// twice across headers, constant_keys and extra_keys; a lookup_service;
// valid durations; stale_age only with max_age; cache_size_bytes > 0.
// Error fields are relative to the plugin's typed_config.
//
// Not checked: whether lookup_service's URI scheme has a resolver, which
// depends on the application's resolver registry.
func checkRLSPluginConfig(b []byte) error {
	var cfg []byte
	err := rangeFields(b, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
		if num == rlsSpecifierConfig {
			cfg = v
		}
		return nil
	})
	if err != nil {
		return invalid("", "decoding RouteLookupClusterSpecifier: %w", err)
	}
	if cfg == nil {
		return invalid("route_lookup_config", "missing")
	}
	const field = "route_lookup_config"
	var (
		keybuilders           int
		lookupService         string
		maxAgeSet, staleAgSet bool
		cacheSize             int64
		paths                 = map[string]bool{}
	)
	err = rangeFields(cfg, func(num protowire.Number, typ protowire.Type, v []byte, u uint64) error {
		switch num {
		case rlsConfigGrpcKeybuilders:
			if err := checkRLSKeyBuilder(v, paths); err != nil {
				return withFieldPrefix(indexed("grpc_keybuilders", keybuilders), err)
			}
			keybuilders++
		case rlsConfigLookupService:
			lookupService = string(v)
		case rlsConfigTimeout, rlsConfigMaxAge, rlsConfigStaleAge:
			names := map[protowire.Number]string{rlsConfigTimeout: "lookup_service_timeout", rlsConfigMaxAge: "max_age", rlsConfigStaleAge: "stale_age"}
			d := &durationpb.Duration{}
			if err := proto.Unmarshal(v, d); err != nil {
				return invalid(names[num], "decoding Duration: %w", err)
			}
			if err := d.CheckValid(); err != nil {
				return invalid(names[num], "invalid duration: %w", err)
			}
			maxAgeSet = maxAgeSet || (num == rlsConfigMaxAge && d.AsDuration() != 0)
			staleAgSet = staleAgSet || (num == rlsConfigStaleAge && d.AsDuration() != 0)
		case rlsConfigCacheSizeBytes:
			if typ == protowire.VarintType {
				cacheSize = int64(u)
			}
		}
		return nil
	})
	if err != nil {
		if ve, ok := err.(*ValidationError); ok {
			return withFieldPrefix(field, ve)
		}
		return invalid(field, "decoding RouteLookupConfig: %w", err)
	}
	switch {
	case keybuilders == 0:
		return invalid(field+".grpc_keybuilders", "empty")
	case lookupService == "":
		return invalid(field+".lookup_service", "empty")
	case staleAgSet && !maxAgeSet:
		return invalid(field+".stale_age", "set without max_age")
	case cacheSize <= 0:
		return invalid(field+".cache_size_bytes", "%d, must be greater than 0", cacheSize)
	}
	return nil
}

// checkRLSKeyBuilder validates one GrpcKeyBuilder; paths holds the
// "/service/method" paths of the builders seen so far.
func checkRLSKeyBuilder(b []byte, paths map[string]bool) error {
	keys := map[string]bool{}
	var (
		headers   int
		extraKeys [][]byte
		nameBufs  [][]byte
	)
	err := rangeFields(b, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case rlsKBNames:
			nameBufs = append(nameBufs, v)
		case rlsKBConstantKeys:
			k, _ := scanStringField(v, rlsMapKey)
			keys[k] = true
		case rlsKBExtraKeys:
			extraKeys = append(extraKeys, v)
		}
		return nil
	})
	if err != nil {
		return invalid("", "decoding GrpcKeyBuilder: %w", err)
	}
	// Headers after constant_keys, as grpc-go checks them.
	err = rangeFields(b, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
		if num != rlsKBHeaders {
			return nil
		}
		field := indexed("headers", headers)
		headers++
		var key string
		var required bool
		err := rangeFields(v, func(num protowire.Number, _ protowire.Type, v []byte, u uint64) error {
			switch num {
			case rlsMatcherKey:
				key = string(v)
			case rlsMatcherRequired:
				required = u != 0
			}
			return nil
		})
		switch {
		case err != nil:
			return invalid(field, "decoding NameMatcher: %w", err)
		case required:
			return invalid(field+".required_match", "must not be set")
		case keys[key]:
			return invalid(field+".key", "key %q used twice", key)
		}
		keys[key] = true
		return nil
	})
	if err != nil {
		return err
	}
	// extra_keys: the last occurrence wins, as proto.Unmarshal merges.
	var extra [3]string // host, service, method
	for _, ek := range extraKeys {
		_ = rangeFields(ek, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
			if num >= 1 && num <= 3 {
				extra[num-1] = string(v)
			}
			return nil
		})
	}
	for i, k := range extra {
		if keys[k] {
			return invalid("extra_keys."+[]string{"host", "service", "method"}[i], "key %q used twice", k)
		}
	}
	if len(nameBufs) == 0 {
		return invalid("names", "empty")
	}
	for i, nb := range nameBufs {
		service, _ := scanStringField(nb, rlsNameService)
		method, _ := scanStringField(nb, rlsNameMethod)
		switch path := "/" + service + "/" + method; {
		case service == "":
			return invalid(indexed("names", i)+".service", "empty")
		case strings.Contains(method, "/"):
			return invalid(indexed("names", i)+".method", "%q contains '/'", method)
		case paths[path]:
			return invalid(indexed("names", i), "name %s appears twice", path)
		default:
			paths[path] = true
		}
	}
	return nil
}

// rangeFields calls fn for each field of the serialized message b, with
// the value of a length-delimited field in v and of a varint in u. It
// stops at the first error of fn or of the wire format.
func rangeFields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, u uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var (
			v []byte
			u uint64
		)
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			u, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, typ, v, u); err != nil {
			return err
		}
	}
	return nil
}
