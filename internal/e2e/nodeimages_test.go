package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"orch/internal/kubelet/images"
)

// TestNodeReportsImages: the node's status.images, read with the real
// kubectl, names the built-in pause image and the image imported from the
// agent's air-gap directory (the busybox test image), as `kubectl describe
// node` and the scheduler's ImageLocality score need.
func TestNodeReportsImages(t *testing.T) {
	s := StartServer(t)
	StartAgent(t, s, "e2e-images")
	eventually(t, 2*time.Minute, func() string {
		r := s.Run(t, Cmd{Args: []string{"get", "node", "e2e-images", "-o", "jsonpath={.status.images[*].names}"}})
		for _, ref := range []string{images.PauseRef, images.BusyboxRef} {
			if r.Code != 0 || !strings.Contains(r.Stdout, ref) {
				return fmt.Sprintf("status.images names %q (exit %d, %s), want %s among them", r.Stdout, r.Code, r.Stderr, ref)
			}
		}
		return ""
	})
}
