package join

import "net/http"

// refusedTransport tells the Credentials when the apiserver answers 401 to
// one of them: the certificates are no longer accepted (the node's Node
// was deleted, which ends its registration), and the Renewer asks for new
// ones at once instead of when they are due.
type refusedTransport struct {
	next    http.RoundTripper
	refused chan<- struct{}
}

func (t refusedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		select {
		case t.refused <- struct{}{}:
		default: // a renewal is already asked for
		}
	}
	return resp, err
}
