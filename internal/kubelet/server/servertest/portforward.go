package servertest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/portforward"
)

// PortForwardEcho forwards a free local port to remotePort of a pod through
// d (client-go's SPDY or WebSocket dialer for a portforward URL) and checks
// that a line written to it comes back, as the test kubelet's streaming
// server echoes port-forward streams.
func PortForwardEcho(t *testing.T, d httpstream.Dialer, remotePort int) {
	t.Helper()
	stop, ready := make(chan struct{}), make(chan struct{})
	var log bytes.Buffer
	pf, err := portforward.NewOnAddresses(d, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(remotePort)}, stop, ready, &log, &log)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("ForwardPorts: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the port forward is not ready after 20 s")
	}
	ports, _ := pf.GetPorts()
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "ping\n")
	line, err := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	close(stop)
	<-errc
	if err != nil || line != "ping\n" {
		t.Fatalf("echo through the forward: %q, %v (%s)", line, err, log.String())
	}
}
