// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"net/url"
	"strings"
)

// ExpandTemplate returns template with every "%s" replaced by target
// (R-5.4; grpc-go PopulateResourceTemplate). When template starts with
// "xdstp:", target is percent-encoded one path segment at a time: it is
// split on "/", each segment is encoded with url.PathEscape, and the
// segments are joined again, so "/" stays as it is. Other templates get
// target verbatim. A template without "%s" is returned unchanged.
//
// Examples for an xdstp template: "foo.example.com:8080" is unchanged;
// "a;b,c" becomes "a%3Bb%2Cc"; "svc/with space" becomes
// "svc/with%20space"; "[::1]:80" becomes "%5B::1%5D:80".
func ExpandTemplate(template, target string) string {
	if !strings.Contains(template, "%s") {
		return template
	}
	if strings.HasPrefix(template, "xdstp:") {
		segs := strings.Split(target, "/")
		for i, s := range segs {
			segs[i] = url.PathEscape(s)
		}
		target = strings.Join(segs, "/")
	}
	return strings.ReplaceAll(template, "%s", target)
}

// ListenerResourceName returns the Listener resource name for a client
// target (R-5.5, gRFC A47): authority "" (an "xds:///target" URI) uses
// ClientDefaultListenerResourceNameTemplate, any other authority
// ("xds://authority/target") the ClientListenerResourceNameTemplate of
// Authorities[authority]. The template is expanded with ExpandTemplate.
//
// It returns an error matching ErrUnknownAuthority, naming the authority,
// when a non-empty authority is not a key of c.Authorities.
func (c *Config) ListenerResourceName(authority, target string) (string, error) {
	tmpl := c.ClientDefaultListenerResourceNameTemplate
	if authority != "" {
		a, ok := c.Authorities[authority]
		if !ok {
			return "", &unknownAuthorityError{authority: authority}
		}
		tmpl = a.ClientListenerResourceNameTemplate
	}
	if tmpl == "" {
		// Hand-built Config: apply Parse's default.
		tmpl = DefaultClientListenerResourceNameTemplate
	}
	return ExpandTemplate(tmpl, target), nil
}

// ServersForAuthority returns the management servers of authority, the
// authority of an xdstp resource name ("" for "xdstp:///..."): the
// authority's own Servers, or c.Servers when it lists none.
// The returned slice is c's own and must not be modified.
//
// It returns an error matching ErrUnknownAuthority, naming the authority in
// quotes, when authority is not a key of c.Authorities; the watch of such a
// name fails at once.
func (c *Config) ServersForAuthority(authority string) ([]*ServerConfig, error) {
	a, ok := c.Authorities[authority]
	if !ok {
		return nil, &unknownAuthorityError{authority: authority}
	}
	if len(a.Servers) == 0 {
		return c.Servers, nil
	}
	return a.Servers, nil
}
