// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
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

// configSourceKind is the config_source_specifier of a ConfigSource, as
// far as gRPC cares.
type configSourceKind uint8

const (
	configSourceNone  configSourceKind = iota // no ConfigSource, or no specifier
	configSourceADS                           // ads
	configSourceSelf                          // self
	configSourceOther                         // path, api_config_source, …
)

func configSourceKindOf(cs *v3corepb.ConfigSource) configSourceKind {
	switch cs.GetConfigSourceSpecifier().(type) {
	case *v3corepb.ConfigSource_Ads:
		return configSourceADS
	case *v3corepb.ConfigSource_Self:
		return configSourceSelf
	case nil:
		return configSourceNone
	default:
		return configSourceOther
	}
}

// checkConfigSource checks that cs points back at the ADS stream: gRPC only
// supports the "ads" and "self" config sources. A nil cs is
// rejected too, as in grpc-go.
func checkConfigSource(field string, cs *v3corepb.ConfigSource) error {
	return checkConfigSourceKind(field, configSourceKindOf(cs))
}

func checkConfigSourceKind(field string, k configSourceKind) error {
	switch k {
	case configSourceADS, configSourceSelf:
		return nil
	case configSourceNone:
		return invalid(field, "missing, must be ads or self")
	default:
		return invalid(field, "config source must be ads or self")
	}
}

// duration converts d, which must be valid and not negative; an error
// names the field of the duration.
func duration(field string, d *durationpb.Duration) (time.Duration, error) {
	if err := d.CheckValid(); err != nil {
		return 0, invalid(field, "invalid duration: %w", err)
	}
	v := d.AsDuration()
	if v < 0 {
		return 0, invalid(field, "negative duration %v", v)
	}
	return v, nil
}

// durationParts is a google.protobuf.Duration read without allocating
// one; set is false when the field is absent.
type durationParts struct {
	set     bool
	seconds int64
	nanos   int32
}

func durationPartsOf(d *durationpb.Duration) durationParts {
	if d == nil {
		return durationParts{}
	}
	return durationParts{set: true, seconds: d.GetSeconds(), nanos: d.GetNanos()}
}

// duration converts d as duration does.
func (d durationParts) duration(field string) (time.Duration, error) {
	// The common case, a valid duration of less than 290 years, is
	// checked here; anything else goes through durationpb for its error.
	const maxSeconds = math.MaxInt64 / int64(time.Second)
	if d.seconds >= 0 && d.seconds < maxSeconds && d.nanos >= 0 && d.nanos < 1e9 {
		return time.Duration(d.seconds)*time.Second + time.Duration(d.nanos), nil
	}
	pb := durationpb.Duration{Seconds: d.seconds, Nanos: d.nanos}
	return duration(field, &pb)
}

// optDuration sets *out to d when d is set; d must be valid and not
// negative.
func optDuration(field string, d *durationpb.Duration, out *time.Duration) error {
	if d == nil {
		return nil
	}
	v, err := duration(field, d)
	if err != nil {
		return err
	}
	*out = v
	return nil
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

// addressArena builds the "host:port" addresses of one resource in one
// allocation, when it is sized beforehand: they have the resource's
// lifetime, and one allocation instead of one per endpoint is much of the
// cost of converting a ClusterLoadAssignment. The zero value is ready.
type addressArena struct {
	sb strings.Builder // written only by appending: earlier strings stay valid
}

// joinHostPort is net.JoinHostPort for a numeric port, in the arena.
func (a *addressArena) joinHostPort(host string, port uint32) string {
	var digits [10]byte // the decimal port, written from the end
	i := len(digits)
	for {
		i--
		digits[i] = byte('0' + port%10)
		if port /= 10; port == 0 {
			break
		}
	}
	start := a.sb.Len()
	if strings.IndexByte(host, ':') >= 0 {
		a.sb.WriteByte('[')
		a.sb.WriteString(host)
		a.sb.WriteString("]:")
	} else {
		a.sb.WriteString(host)
		a.sb.WriteByte(':')
	}
	a.sb.Write(digits[i:])
	return a.sb.String()[start:]
}

// oneofName returns the name of the field set in the oneof named oneof of
// m, or "none"; for messages about unsupported choices.
func oneofName(m protoreflect.Message, oneof protoreflect.Name) string {
	od := m.Descriptor().Oneofs().ByName(oneof)
	if od == nil {
		return string(oneof)
	}
	if fd := m.WhichOneof(od); fd != nil {
		return string(fd.Name())
	}
	return "none"
}
