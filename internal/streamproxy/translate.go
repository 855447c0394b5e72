package streamproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rcconst "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/remotecommand"
	clientspdy "k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// Like upstream: an idle WebSocket stream is closed after four hours, and
// the final status gets ten seconds to be written.
const (
	idleTimeout       = 4 * time.Hour
	statusWriteBudget = 10 * time.Second
	spdyPingPeriod    = 5 * time.Second
)

// wsStreams are the server side of a v5.channel.k8s.io WebSocket.
type wsStreams struct {
	conn           *wsstream.Conn
	stdin          io.Reader
	stdout, stderr io.Writer
	errStream      io.Writer
	resize         chan remotecommand.TerminalSize
}

// openWebSocket answers the WebSocket handshake with the v5 protocol and
// the channels opts asks for (stdin 0, stdout 1, stderr 2, error 3, resize 4).
func openWebSocket(w http.ResponseWriter, r *http.Request, opts Options) (*wsStreams, error) {
	read := func(on bool) wsstream.ChannelType {
		if on {
			return wsstream.ReadChannel
		}
		return wsstream.IgnoreChannel
	}
	write := func(on bool) wsstream.ChannelType {
		if on {
			return wsstream.WriteChannel
		}
		return wsstream.IgnoreChannel
	}
	channels := []wsstream.ChannelType{
		rcconst.StreamStdIn:  read(opts.Stdin),
		rcconst.StreamStdOut: write(opts.Stdout),
		rcconst.StreamStdErr: write(opts.Stderr),
		rcconst.StreamErr:    wsstream.WriteChannel,
		rcconst.StreamResize: wsstream.ReadChannel,
	}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		rcconst.StreamProtocolV5Name: {Binary: true, Channels: channels},
	})
	conn.SetIdleTimeout(idleTimeout)
	_, streams, err := conn.Open(w, r)
	if err != nil {
		return nil, err
	}
	// An empty first write tells the client the streams are ready.
	first := rcconst.StreamErr
	switch {
	case opts.Stdout:
		first = rcconst.StreamStdOut
	case opts.Stderr:
		first = rcconst.StreamStdErr
	}
	if _, err := streams[first].Write(nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("write the first WebSocket frame: %w", err)
	}
	s := &wsStreams{conn: conn, stdin: streams[rcconst.StreamStdIn], stdout: streams[rcconst.StreamStdOut],
		stderr: streams[rcconst.StreamStdErr], errStream: streams[rcconst.StreamErr]}
	if opts.TTY {
		s.resize = make(chan remotecommand.TerminalSize)
		go readResizes(r.Context(), streams[rcconst.StreamResize], s.resize)
	}
	return s, nil
}

// readResizes decodes the JSON terminal sizes of the resize channel.
func readResizes(ctx context.Context, r io.Reader, out chan<- remotecommand.TerminalSize) {
	defer close(out)
	dec := json.NewDecoder(r)
	for {
		var size remotecommand.TerminalSize
		if err := dec.Decode(&size); err != nil {
			return
		}
		select {
		case out <- size:
		case <-ctx.Done():
			return
		}
	}
}

func (s *wsStreams) writeStatus(status metav1.Status) {
	data, err := json.Marshal(status)
	if err != nil {
		return
	}
	s.conn.SetWriteDeadline(statusWriteBudget)
	s.errStream.Write(data)
}

// sizeQueue hands the client's resizes to the SPDY executor.
type sizeQueue chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	size, ok := <-q
	if !ok {
		return nil
	}
	return &size
}

// translate serves a v5 WebSocket exec or attach by running it over SPDY
// against the backend, as upstream's StreamTranslatorHandler does.
func translate(w http.ResponseWriter, r *http.Request, b Backend, opts Options) {
	ws, err := openWebSocket(w, r, opts)
	if err != nil {
		b.Log.Debug("WebSocket handshake failed", "path", r.URL.Path, "err", err)
		return // the handshake wrote its own error
	}
	defer ws.conn.Close()

	config := spdy.RoundTripperConfig{TLS: b.TLS, PingPeriod: spdyPingPeriod,
		Proxier: func(*http.Request) (*url.URL, error) { return nil, nil }}
	if b.Dial != nil { // then the transport dials, with TLS and no proxy
		config = spdy.RoundTripperConfig{PingPeriod: spdyPingPeriod, UpgradeTransport: b.transport()}
	}
	rt, err := spdy.NewRoundTripperWithConfig(config)
	if err != nil {
		ws.writeStatus(apierrors.NewInternalError(err).ErrStatus)
		return
	}
	executor, err := remotecommand.NewSPDYExecutorRejectRedirects(rt, clientspdy.NewUpgraderForStreaming(rt), http.MethodPost, b.Location)
	if err != nil {
		ws.writeStatus(apierrors.NewInternalError(err).ErrStatus)
		return
	}
	var so remotecommand.StreamOptions
	if opts.Stdin {
		so.Stdin = ws.stdin
	}
	if opts.Stdout {
		so.Stdout = ws.stdout
	}
	if opts.Stderr {
		so.Stderr = ws.stderr
	}
	if opts.TTY {
		so.Tty, so.TerminalSizeQueue = true, sizeQueue(ws.resize)
	}
	ws.writeStatus(statusOf(executor.StreamWithContext(r.Context(), so)))
}

// statusOf is the status the v5 error channel carries for a session's end.
func statusOf(err error) metav1.Status {
	var statusErr *apierrors.StatusError
	var exitErr exec.CodeExitError
	switch {
	case err == nil:
		return metav1.Status{Status: metav1.StatusSuccess}
	case errors.As(err, &statusErr):
		return statusErr.ErrStatus
	case errors.As(err, &exitErr) && exitErr.Exited():
		return metav1.Status{
			Status: metav1.StatusFailure,
			Reason: rcconst.NonZeroExitCodeReason,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
				{Type: rcconst.ExitCodeCauseType, Message: fmt.Sprintf("%d", exitErr.ExitStatus())},
			}},
			Message: fmt.Sprintf("command terminated with non-zero exit code: %v", exitErr),
		}
	}
	return apierrors.NewInternalError(err).ErrStatus
}
