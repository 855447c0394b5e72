package localpath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// fakeQuota records what it is asked; like the real one, a missing
// directory is an error that wraps fs.ErrNotExist.
type fakeQuota struct {
	mu       sync.Mutex
	calls    []quotaCall
	enforced bool
	err      error
}

type quotaCall struct {
	dir  string
	size int64
}

var _ quotaSetter = (*fakeQuota)(nil)

func (f *fakeQuota) setQuota(dir string, size int64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, quotaCall{dir, size})
	if _, err := os.Stat(dir); err != nil {
		return false, err
	}
	return f.enforced, f.err
}

func (f *fakeQuota) took() []quotaCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// localPV is a volume Provisioner made, of size (none when ""), at
// root/NAME_app_data on node n1.
func localPV(name, root, size string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{NodeLabel: "n1"},
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: filepath.Join(root, DirName(name, "app", "data"))}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	if size != "" {
		pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	}
	return pv
}

func TestEnsureHoldsTheDirectoryToItsCapacity(t *testing.T) {
	root := t.TempDir()
	q := &fakeQuota{enforced: true}
	pv := localPV("pvc-1", root, "1Mi")
	dir := pv.Spec.Local.Path
	if err := ensure(pv, q); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() || st.Mode().Perm() != dirMode {
		t.Fatalf("directory: %v, %v; want one of mode 0777", st, err)
	}
	// Made before (by an older orch, say): its limit is set all the same.
	if err := ensure(pv, q); err != nil {
		t.Fatal(err)
	}
	// No capacity: no limit.
	if err := ensure(localPV("pvc-2", root, ""), q); err != nil {
		t.Fatal(err)
	}
	want := []quotaCall{{dir, 1 << 20}, {dir, 1 << 20}, {filepath.Join(root, "pvc-2_app_data"), 0}}
	if got := q.took(); !slices.Equal(got, want) {
		t.Errorf("setQuota calls %v, want %v", got, want)
	}

	q.err = errors.New("quotactl: no space left on device")
	if err := ensure(pv, q); err == nil || !strings.Contains(err.Error(), `hold volume "pvc-1" to its capacity: quotactl: no space left on device`) {
		t.Errorf("ensure with a failing quota = %v", err)
	}
	// A volume that is not Provisioner's gets nothing.
	foreign := localPV("pvc-3", root, "1Mi")
	foreign.Annotations = nil
	if err := ensure(foreign, q); !errors.Is(err, ErrNotLocalPath) {
		t.Errorf("ensure of another provisioner's volume = %v", err)
	}
	if n := len(q.took()); n != 4 {
		t.Errorf("%d setQuota calls, want 4", n)
	}
}

// TestCleanerFollowsCapacity: the Cleaner limits an existing directory to
// its volume's capacity, leaves a directory not made yet to Ensure,
// clears the limit before it removes a released volume's directory (and
// removes it even when clearing fails), and leaves other volumes alone.
func TestCleanerFollowsCapacity(t *testing.T) {
	root := t.TempDir()
	grown := localPV("pvc-grown", root, "4Mi")
	unmade := localPV("pvc-unmade", root, "1Gi")
	released := localPV("pvc-released", root, "1Gi")
	released.Finalizers = []string{Finalizer}
	released.Status.Phase = corev1.VolumeReleased
	stuck := released.DeepCopy()
	stuck.Name = "pvc-stuck"
	stuck.Spec.Local.Path = filepath.Join(root, DirName(stuck.Name, "app", "data"))
	foreign := localPV("pvc-foreign", root, "1Gi")
	foreign.Annotations = nil
	for _, pv := range []*corev1.PersistentVolume{grown, released, stuck, foreign} {
		if err := os.MkdirAll(pv.Spec.Local.Path, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	objects := []runtime.Object{grown, unmade, released, stuck, foreign}
	c := NewCleaner(fake.NewClientset(objects...), "n1", slog.New(slog.NewTextHandler(t.Output(), nil)))
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); c.factory.Shutdown(); quotas.setLog(nil) }()
	c.factory.Start(ctx.Done())
	c.factory.WaitForCacheSync(ctx.Done())

	for _, tc := range []struct {
		pv   *corev1.PersistentVolume
		err  error
		want []quotaCall
		gone bool // the directory is removed
	}{
		{pv: grown, want: []quotaCall{{grown.Spec.Local.Path, 4 << 20}}},
		{pv: unmade, want: []quotaCall{{unmade.Spec.Local.Path, 1 << 30}}},
		{pv: foreign},
		{pv: released, want: []quotaCall{{released.Spec.Local.Path, 0}}, gone: true},
		{pv: stuck, err: errors.New("quotactl: input/output error"), want: []quotaCall{{stuck.Spec.Local.Path, 0}}, gone: true},
	} {
		t.Run(tc.pv.Name, func(t *testing.T) {
			q := &fakeQuota{enforced: true, err: tc.err}
			c.quota = q
			if err := c.sync(ctx, tc.pv.Name); err != nil {
				t.Fatal(err)
			}
			if got := q.took(); !slices.Equal(got, tc.want) {
				t.Errorf("setQuota calls %v, want %v", got, tc.want)
			}
			if _, err := os.Stat(tc.pv.Spec.Local.Path); tc.pv != unmade && tc.gone != errors.Is(err, fs.ErrNotExist) {
				t.Errorf("directory: %v; want it gone: %v", err, tc.gone)
			}
		})
	}

	t.Run("a failure to limit is retried", func(t *testing.T) {
		c.quota = &fakeQuota{enforced: true, err: errors.New("quotactl: input/output error")}
		if err := c.sync(ctx, grown.Name); err == nil || !strings.Contains(err.Error(), `hold volume "pvc-grown" to its capacity`) {
			t.Errorf("sync = %v, want the quota's error", err)
		}
	})
}

func TestChanged(t *testing.T) {
	small, big := localPV("pvc-1", "/s", "1Gi"), localPV("pvc-1", "/s", "2Gi")
	released := small.DeepCopy()
	released.Finalizers = []string{Finalizer}
	released.Status.Phase = corev1.VolumeReleased
	relabelled := small.DeepCopy()
	relabelled.Labels["x"] = "y"
	for _, tc := range []struct {
		name     string
		was, now *corev1.PersistentVolume
		want     bool
	}{
		{"grown", small, big, true},
		{"released", small, released, true},
		{"resync", small, small, false},
		{"labels only", small, relabelled, false},
	} {
		if got := changed(tc.was, tc.now); got != tc.want {
			t.Errorf("%s: changed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFindMount(t *testing.T) {
	info := []byte(`21 26 0:20 / /proc rw,relatime - proc proc rw
26 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
27 26 0:24 / /run/x ro,nosuid shared:5 - tmpfs tmpfs ro,size=4k
48 26 7:3 / /mnt/with\040space rw,relatime shared:7 master:1 - xfs /dev/loop3 rw,attr2,inode64,prjquota
49 26 7:3 /sub /bind rw,relatime - xfs /dev/loop3 rw,attr2,inode64,prjquota
malformed line
`)
	for _, tc := range []struct {
		majMin string
		want   mount
		found  bool
	}{
		{"254:0", mount{"254:0", "/", "ext4", "/dev/vda", "rw,discard"}, true},
		{"0:24", mount{"0:24", "/run/x", "tmpfs", "tmpfs", "ro,size=4k"}, true},
		{"7:3", mount{"7:3", "/mnt/with space", "xfs", "/dev/loop3", "rw,attr2,inode64,prjquota"}, true},
		{"8:1", mount{majMin: "8:1"}, false},
	} {
		got, found := findMount(info, tc.majMin)
		if got != tc.want || found != tc.found {
			t.Errorf("findMount(%s) = %+v, %v; want %+v, %v", tc.majMin, got, found, tc.want, tc.found)
		}
	}
}

func TestWhyQuotasAreOff(t *testing.T) {
	ext4 := mount{majMin: "7:0", fstype: "ext4", source: "/dev/loop0"}
	for _, tc := range []struct {
		name  string
		m     mount
		found bool
		want  string
	}{
		{"ext4", ext4, true, ""},
		{"xfs", mount{majMin: "7:0", fstype: "xfs", source: "/dev/loop0"}, true, ""},
		{"not mounted", mount{majMin: "0:99"}, false, "no filesystem of device 0:99 in /proc/self/mountinfo"},
		{"tmpfs", mount{majMin: "0:24", fstype: "tmpfs", source: "tmpfs"}, true, "tmpfs has no project quotas orch sets (ext4 and XFS have)"},
		{"overlay", mount{majMin: "0:30", fstype: "overlay", source: "overlay"}, true, "overlay has no project quotas orch sets (ext4 and XFS have)"},
		{"no device", mount{majMin: "0:31", fstype: "ext4", source: "none"}, true, `its source "none" is not the path of a block device`},
	} {
		if got := quotaUnfit(tc.m, tc.found); got != tc.want {
			t.Errorf("quotaUnfit(%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		fstype            string
		counted, enforced bool
		err               error
		want              string
	}{
		{"ext4", true, true, nil, ""},
		{"xfs", true, true, nil, ""},
		{"ext4", false, false, nil, "project quotas are off: it needs the quota and project features (mkfs.ext4 -O quota,project, or tune2fs -O quota,project while unmounted) and the mount option prjquota"},
		{"ext4", true, false, nil, "project quotas are counted, not enforced: mount it with -o prjquota"},
		{"xfs", false, false, nil, "project quotas are off: mount it with -o prjquota"},
		{"xfs", true, false, nil, "project quotas are counted, not enforced (pqnoenforce): mount it with -o prjquota"},
		{"ext4", false, false, fmt.Errorf("quotactl Q_XGETQSTATV /dev/vda: %w", syscall.ENOENT),
			"the kernel could not tell its quota state: quotactl Q_XGETQSTATV /dev/vda: no such file or directory"},
		{"ext4", false, false, fmt.Errorf("quotactl Q_XGETQSTATV /dev/vda: %w", syscall.ENOSYS),
			"the kernel has no quota support for it (quotactl Q_XGETQSTATV /dev/vda: function not implemented)"},
	} {
		if got := quotaOff(tc.fstype, tc.counted, tc.enforced, tc.err); got != tc.want {
			t.Errorf("quotaOff(%s, %v, %v, %v) = %q, want %q", tc.fstype, tc.counted, tc.enforced, tc.err, got, tc.want)
		}
	}
}

func TestQuotaLimit(t *testing.T) {
	for _, tc := range []struct {
		size   int64
		fstype string
		want   uint64
	}{
		{1 << 20, "ext4", 1 << 20},
		{1000, "ext4", 1024},
		{1000, "xfs", 1024},
		{513, "xfs", 1024},
		{1, "xfs", 512},
		{0, "ext4", 0},
		{-5, "xfs", 0},
		{1000000000, "ext4", 1000000000 + 512},
	} {
		if got := quotaLimit(tc.size, tc.fstype); got != tc.want {
			t.Errorf("quotaLimit(%d, %s) = %d, want %d", tc.size, tc.fstype, got, tc.want)
		}
	}
}

func TestReservedProjectIDs(t *testing.T) {
	projid := []byte("# name:id\nlogs:10\nbig:1048577\n\nbad:x\n")
	projects := []byte("10:/srv/logs\n42:/srv/other\n#7:/commented\n")
	got := reservedProjectIDs(projid, projects)
	want := map[uint32]bool{10: true, 1048577: true, 42: true}
	if len(got) != len(want) {
		t.Fatalf("reserved %v, want %v", got, want)
	}
	for id := range want {
		if !got[id] {
			t.Errorf("reserved %v, want %v", got, want)
		}
	}
	if n := len(reservedProjectIDs(nil, nil)); n != 0 {
		t.Errorf("no files: %d IDs", n)
	}
}

func TestPickProjectID(t *testing.T) {
	name := "pvc-0f6c_app_data"
	start := firstCandidate(name)
	if start < firstProjectID || start >= firstProjectID+projectIDSpan || start != firstCandidate(name) {
		t.Fatalf("firstCandidate = %d, outside [%d, %d) or not stable", start, firstProjectID, uint64(firstProjectID+projectIDSpan))
	}
	if firstCandidate("pvc-1_a_b") == firstCandidate("pvc-2_a_b") {
		t.Errorf("two volumes start from one ID")
	}
	free := func(uint32) (bool, error) { return false, nil }
	if id, err := pickProjectID(name, free); id != start || err != nil {
		t.Errorf("nothing taken: %d, %v; want %d", id, err, start)
	}
	busy := map[uint32]bool{start: true, start + 1: true}
	id, err := pickProjectID(name, func(id uint32) (bool, error) { return busy[id], nil })
	if id != start+2 || err != nil {
		t.Errorf("two taken: %d, %v; want %d", id, err, start+2)
	}
	boom := errors.New("quotactl: input/output error")
	if _, err := pickProjectID(name, func(uint32) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("a failing look-up: %v", err)
	}
	var asked []uint32
	_, err = pickProjectID(name, func(id uint32) (bool, error) { asked = append(asked, id); return true, nil })
	if !errors.Is(err, errNoProjectID) || len(asked) != maxIDProbes {
		t.Errorf("all taken: %v after %d look-ups", err, len(asked))
	}
	for _, id := range asked {
		if id < firstProjectID || id >= firstProjectID+projectIDSpan {
			t.Fatalf("asked about %d, outside the range", id)
		}
	}
}

// TestQuotasOfThisFilesystem runs the real setter on the test's temporary
// directory, whatever its filesystem: it decides once, logs once, and
// where quotas are off it leaves the directory as it was.
func TestQuotasOfThisFilesystem(t *testing.T) {
	var out bytes.Buffer
	q := &projectQuotas{known: map[string]bool{}, log: slog.New(slog.NewTextHandler(&out, nil))}
	dir := filepath.Join(t.TempDir(), "pvc-1_app_data")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	first, err := q.setQuota(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	again, err := q.setQuota(dir, 2<<20)
	if err != nil || again != first {
		t.Fatalf("second setQuota = %v, %v; want %v", again, err, first)
	}
	if _, err := q.setQuota(filepath.Join(dir, "missing"), 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v, want ErrNotExist", err)
	}
	t.Logf("enforced: %v; log:\n%s", first, out.String())
	if n := strings.Count(out.String(), "local-path volume sizes are"); n != 1 {
		t.Errorf("%d verdicts logged for one filesystem, want 1", n)
	}
	if !first && quotasBuilt {
		if id, err := readProject(dir); err == nil && id != 0 {
			t.Errorf("quotas off, yet the directory is in project %d", id)
		}
	}
}
