package localpath

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// quotaSetter holds a volume's directory to a size.
type quotaSetter interface {
	// setQuota limits the blocks that dir and everything below it may
	// take to size bytes (0: no limit) and says whether the limit is
	// enforced: false, with a nil error, where dir's filesystem has no
	// project quotas on. A directory without a project of its own gets
	// one first, unless size is 0. A missing dir is an error that wraps
	// fs.ErrNotExist.
	setQuota(dir string, size int64) (enforced bool, err error)
}

var _ quotaSetter = (*projectQuotas)(nil)

// quotas is the node's quotaSetter, shared by Ensure (the kubelet's pod
// workers) and the Cleaner, so that each filesystem is looked at, and
// logged, once per process.
var quotas = &projectQuotas{known: map[string]bool{}}

// Project IDs. A volume's project ID is recorded in nothing but its
// directory: FS_IOC_FSGETXATTR reads it back, and a directory whose ID
// differs from its parent's has one of its own (one equal to its parent's
// was inherited, from an administrator's PROJINHERIT on the storage root,
// say, and is not the volume's). A new one starts from a hash of the
// directory's name (pvc-<UID>_<namespace>_<claim>, unique per volume), so
// that the search below usually takes one step, in [firstProjectID,
// firstProjectID+projectIDSpan): above the small IDs administrators give
// in /etc/projid and /etc/projects, below 2^31 for tools that read IDs as
// signed (XFS takes IDs past 2^16 with projid32bit, which mkfs.xfs has
// turned on by default since 2012). It skips, one by one, any ID those files name and any ID the
// filesystem already counts or limits (another volume's, another
// program's, or a limit left behind), so two volumes never share one.
// The search and the tagging that follows run under one lock, and the
// tagged directory is counted at once, so the next search skips its ID.
const (
	firstProjectID = 1 << 20
	projectIDSpan  = 1<<31 - firstProjectID
	maxIDProbes    = 1000
)

// projectQuotas sets the project quotas of volume directories on ext4 and
// XFS filesystems that have them enforced.
type projectQuotas struct {
	mu    sync.Mutex
	log   *slog.Logger
	known map[string]bool // by mount.key: whether project quotas are enforced there
}

// setLog makes log the logger of q's messages (slog's default until then).
func (q *projectQuotas) setLog(log *slog.Logger) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.log = log
}

func (q *projectQuotas) logger() *slog.Logger {
	if q.log == nil {
		return slog.Default().With("component", "local-path")
	}
	return q.log
}

// filesystem is what quotactl needs of one: its block device (the special
// file) and its type.
type filesystem struct{ device, fstype string }

// quotaUse is what a filesystem records of a project: its hard block limit
// and use in bytes, its inodes, and whether it has other limits.
type quotaUse struct {
	limit, space, inodes uint64
	otherLimits          bool
}

// taken is true for an ID some files or limits already belong to.
func (u quotaUse) taken() bool { return u.limit != 0 || u.space != 0 || u.inodes != 0 || u.otherLimits }

func (q *projectQuotas) setQuota(dir string, size int64) (bool, error) {
	if !quotasBuilt {
		return false, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	dev, majMin, err := deviceOf(dir)
	if err != nil {
		return false, err
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("find the filesystem of %s: %w", dir, err)
	}
	m, found := findMount(mountinfo, majMin)
	if !q.enforced(dir, m, found) {
		return false, nil
	}
	fsys := filesystem{device: m.source, fstype: m.fstype}
	id, err := q.project(dir, dev, fsys, size > 0)
	if err != nil || id == 0 {
		return true, err
	}
	want := quotaLimit(size, m.fstype)
	if use, err := readQuota(fsys, id); err == nil && use.limit == want {
		return true, nil
	}
	if err := writeQuotaLimit(fsys, id, want); err != nil {
		return true, fmt.Errorf("limit %s to %d bytes: %w", dir, want, err)
	}
	q.logger().Info("set the project quota of a volume's directory", "dir", dir, "project", id, "bytes", want)
	return true, nil
}

// enforced tells whether the project quotas of m, the filesystem of dir,
// are enforced: asked of the kernel, and logged, once per filesystem.
func (q *projectQuotas) enforced(dir string, m mount, found bool) bool {
	key := m.key()
	if !found {
		key = "unmounted " + m.majMin
	}
	if enforced, ok := q.known[key]; ok {
		return enforced
	}
	why := quotaUnfit(m, found)
	if why == "" {
		counted, enforced, err := quotaState(m.source)
		why = quotaOff(m.fstype, counted, enforced, err)
	}
	q.known[key] = why == ""
	log := q.logger().With("dir", filepath.Dir(dir), "filesystem", m.fstype, "device", m.source)
	if why == "" {
		log.Info("local-path volume sizes are enforced here, with a project quota for each volume")
	} else {
		log.Info("local-path volume sizes are recorded, not enforced, here: a volume can fill this filesystem", "why", why)
	}
	return why == ""
}

// project is dir's own project ID; when it has none and assign is set, it
// gets a free one (see firstProjectID), and so does all it holds on its
// filesystem (dev), for a directory that had files before. 0: none.
func (q *projectQuotas) project(dir string, dev uint64, fsys filesystem, assign bool) (uint32, error) {
	id, err := readProject(dir)
	if err != nil {
		return 0, err
	}
	parent, err := readProject(filepath.Dir(dir))
	if err != nil {
		parent = 0 // another filesystem's, or none
	}
	if id != 0 && id != parent {
		return id, nil
	}
	if !assign {
		return 0, nil
	}
	reserved := reservedProjectIDs(readOptional("/etc/projid"), readOptional("/etc/projects"))
	id, err = pickProjectID(filepath.Base(dir), func(id uint32) (bool, error) {
		if reserved[id] || id == parent {
			return true, nil
		}
		use, err := readQuota(fsys, id)
		return use.taken(), err
	})
	if err != nil {
		return 0, fmt.Errorf("give %s a project ID: %w", dir, err)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		ok, err := writeProject(path, id, dev)
		if err == nil && !ok && d.IsDir() {
			return filepath.SkipDir // another filesystem mounted here
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("put %s in project %d: %w", dir, id, err)
	}
	return id, nil
}

func readOptional(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

// mount is a line of /proc/self/mountinfo.
type mount struct{ majMin, mountPoint, fstype, source, superOptions string }

// key names the filesystem of m, as mounted now: a device mounted again
// with other options or another filesystem is another key.
func (m mount) key() string {
	return strings.Join([]string{m.majMin, m.fstype, m.source, m.superOptions}, " ")
}

// findMount finds the filesystem of device majMin in mountinfo (proc(5)):
// "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - TYPE SOURCE
// SUPEROPTIONS". Every line of one device is the same filesystem; the
// first is taken.
func findMount(mountinfo []byte, majMin string) (mount, bool) {
	for line := range bytes.Lines(mountinfo) {
		before, after, ok := strings.Cut(strings.TrimSpace(string(line)), " - ")
		f, g := strings.Fields(before), strings.Fields(after)
		if !ok || len(f) < 6 || len(g) < 3 || f[2] != majMin {
			continue
		}
		return mount{majMin: majMin, mountPoint: unescapeMountinfo(f[4]), fstype: g[0], source: unescapeMountinfo(g[1]), superOptions: g[2]}, true
	}
	return mount{majMin: majMin}, false
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// quotaUnfit says why the project quotas of m cannot be set, before the
// kernel is asked; "" when they may be.
func quotaUnfit(m mount, found bool) string {
	switch {
	case !found:
		return fmt.Sprintf("no filesystem of device %s in /proc/self/mountinfo", m.majMin)
	case m.fstype != "ext4" && m.fstype != "xfs":
		return fmt.Sprintf("%s has no project quotas orch sets (ext4 and XFS have)", m.fstype)
	case !filepath.IsAbs(m.source):
		return fmt.Sprintf("its source %q is not the path of a block device", m.source)
	}
	return ""
}

// quotaOff says why the project quotas of a filesystem of type fstype,
// which the kernel says are counted or enforced or failed to say (err),
// do not hold volumes to their size; "" when they do.
func quotaOff(fstype string, counted, enforced bool, err error) string {
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return fmt.Sprintf("the kernel has no quota support for it (%v)", err)
	case err != nil:
		return fmt.Sprintf("the kernel could not tell its quota state: %v", err)
	case enforced:
		return ""
	case counted && fstype == "xfs":
		return "project quotas are counted, not enforced (pqnoenforce): mount it with -o prjquota"
	case counted:
		return "project quotas are counted, not enforced: mount it with -o prjquota"
	case fstype == "xfs":
		return "project quotas are off: mount it with -o prjquota"
	}
	return "project quotas are off: it needs the quota and project features (mkfs.ext4 -O quota,project, or tune2fs -O quota,project while unmounted) and the mount option prjquota"
}

// quotaLimit is the limit that holds a volume to size bytes on a
// filesystem of type fstype: size rounded up to the unit of its quotactl
// (XFS: 512-byte basic blocks; ext4: 1 KiB blocks); 0, no limit, for a
// size of 0 or less.
func quotaLimit(size int64, fstype string) uint64 {
	if size <= 0 {
		return 0
	}
	unit := uint64(1024)
	if fstype == "xfs" {
		unit = 512
	}
	return (uint64(size) + unit - 1) / unit * unit
}

// reservedProjectIDs are the IDs named in /etc/projid ("name:id") and
// /etc/projects ("id:path"), which xfs_quota and setquota users keep.
func reservedProjectIDs(projid, projects []byte) map[uint32]bool {
	ids := map[uint32]bool{}
	add := func(file []byte, field int) {
		for line := range bytes.Lines(file) {
			s := strings.TrimSpace(string(line))
			if s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			if f := strings.SplitN(s, ":", 2); len(f) == 2 {
				if id, err := strconv.ParseUint(strings.TrimSpace(f[field]), 10, 32); err == nil {
					ids[uint32(id)] = true
				}
			}
		}
	}
	add(projid, 1)
	add(projects, 0)
	return ids
}

// firstCandidate is where the search for name's project ID starts.
func firstCandidate(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return firstProjectID + h.Sum32()%projectIDSpan
}

var errNoProjectID = errors.New("no free project ID")

// pickProjectID is the first ID from firstCandidate(name) on (wrapping
// within the range) that taken says is free.
func pickProjectID(name string, taken func(uint32) (bool, error)) (uint32, error) {
	start := firstCandidate(name) - firstProjectID
	for i := range uint32(maxIDProbes) {
		id := firstProjectID + (start+i)%projectIDSpan
		busy, err := taken(id)
		if err != nil {
			return 0, err
		}
		if !busy {
			return id, nil
		}
	}
	return 0, fmt.Errorf("%w among %d from %d", errNoProjectID, maxIDProbes, firstCandidate(name))
}
