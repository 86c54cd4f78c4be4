// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// unmarshalResource decodes the value of inner into m. A failure is a
// top-level error of the response.
func unmarshalResource(inner *anypb.Any, m proto.Message, typeName string) error {
	if err := proto.Unmarshal(inner.GetValue(), m); err != nil {
		return fmt.Errorf("decoding %s: %w", typeName, err)
	}
	return nil
}

// errEmptyName is the top-level error of a resource without a name
//
func errEmptyName(field string) error {
	return invalid(field, "empty resource name")
}

// checkConfigSource checks that cs points back at the ADS stream: gRPC only
// supports the "ads" and "self" config sources. A nil cs is
// rejected too, as in grpc-go.
func checkConfigSource(field string, cs *v3corepb.ConfigSource) error {
	switch cs.GetConfigSourceSpecifier().(type) {
	case *v3corepb.ConfigSource_Ads, *v3corepb.ConfigSource_Self:
		return nil
	case nil:
		return invalid(field, "missing, must be ads or self")
	default:
		return invalid(field, "config source must be ads or self")
	}
}

// duration converts d, which must be valid and not negative; an error
// names the field of the duration.
func duration(field string, d *durationpb.Duration) (time.Duration, error) {
	if err := d.CheckValid(); err != nil {
		return 0, invalid(field, "invalid duration: %v", err)
	}
	v := d.AsDuration()
	if v < 0 {
		return 0, invalid(field, "negative duration %v", v)
	}
	return v, nil
}

// perMillion scales a FractionalPercent to parts per million, capped at one
// million (100%). Unknown denominators are an error, with a field relative
// to the FractionalPercent.
func perMillion(f *v3typepb.FractionalPercent) (uint32, error) {
	n := uint64(f.GetNumerator())
	switch f.GetDenominator() {
	case v3typepb.FractionalPercent_HUNDRED:
		n *= 10_000
	case v3typepb.FractionalPercent_TEN_THOUSAND:
		n *= 100
	case v3typepb.FractionalPercent_MILLION:
	default:
		return 0, invalid("denominator", "unsupported value %d", int32(f.GetDenominator()))
	}
	return uint32(min(n, 1_000_000)), nil
}

// indexed returns field + "[i]".
func indexed(field string, i int) string {
	return field + "[" + strconv.Itoa(i) + "]"
}

// addWeight adds w to *sum and reports whether the sum still fits in a
// uint32.
func addWeight(sum *uint64, w uint32) bool {
	*sum += uint64(w)
	return *sum <= math.MaxUint32
}

// joinHostPort is net.JoinHostPort for a numeric port, without the
// strconv.Itoa round trip through int.
func joinHostPort(host string, port uint32) string {
	p := strconv.FormatUint(uint64(port), 10)
	for i := 0; i < len(host); i++ {
		if host[i] == ':' {
			return "[" + host + "]:" + p
		}
	}
	return host + ":" + p
}
