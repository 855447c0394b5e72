// Package sdnotify tells systemd that a Type=notify service is ready, by
// sending READY=1 to the socket in $NOTIFY_SOCKET (sd_notify(3)). Without
// that variable (not started by systemd) it does nothing.
package sdnotify

import (
	"fmt"
	"net"
	"os"
)

// Ready sends READY=1; it reports whether a notification was sent.
func Ready() (bool, error) { return send("READY=1") }

func send(state string) (bool, error) {
	socket := os.Getenv("NOTIFY_SOCKET")
	if socket == "" {
		return false, nil
	}
	if socket[0] == '@' { // an abstract socket
		socket = "\x00" + socket[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return false, fmt.Errorf("notify systemd at %q: %w", os.Getenv("NOTIFY_SOCKET"), err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return false, fmt.Errorf("notify systemd: %w", err)
	}
	return true, nil
}
