package localpath

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's side of project quotas: the only file of the package that
// makes system calls. The numbers and layouts are those of linux/fs.h,
// linux/quota.h and linux/dqblk_xfs.h, which golang.org/x/sys/unix does
// not carry.

const quotasBuilt = true

const (
	// _IOR('X', 31, struct fsxattr) and _IOW('X', 32, struct fsxattr) in
	// the generic ioctl encoding (amd64, arm64, arm, 386, riscv64, s390x);
	// on mips, ppc and sparc they differ, and the ioctls fail (ENOTTY).
	fsIocFSGetXattr    = 0x801c581f
	fsIocFSSetXattr    = 0x401c5820
	fsXflagProjInherit = 0x200 // FS_XFLAG_PROJINHERIT: what is made inside gets the directory's project

	prjQuota         = 2        // PRJQUOTA
	qGetQuota        = 0x800007 // Q_GETQUOTA: struct if_dqblk
	qSetQuota        = 0x800008 // Q_SETQUOTA: struct if_dqblk
	qifBLimits       = 1        // QIF_BLIMITS: dqb_bhardlimit and dqb_bsoftlimit are set
	qXGetQuota       = 'X'<<8 + 3
	qXSetQLim        = 'X'<<8 + 4
	qXGetQStatV      = 'X'<<8 + 8
	fsDquotVersion   = 1      // FS_DQUOT_VERSION
	fsProjQuota      = 1 << 1 // FS_PROJ_QUOTA
	fsDQBSoft        = 1 << 2 // FS_DQ_BSOFT
	fsDQBHard        = 1 << 3 // FS_DQ_BHARD
	fsQStatVVersion1 = 1
	fsQuotaPDQAcct   = 1 << 4 // FS_QUOTA_PDQ_ACCT: project usage is counted
	fsQuotaPDQEnfd   = 1 << 5 // FS_QUOTA_PDQ_ENFD: project limits are enforced
)

// fsxattr is struct fsxattr (28 bytes).
type fsxattr struct {
	Xflags, Extsize, Nextents, Projid, Cowextsize uint32
	_                                             [8]byte
}

// ifDqblk is struct if_dqblk; the trailing pad makes it the kernel's 72
// bytes on 32-bit arm too, where Go aligns uint64 to 4.
type ifDqblk struct {
	BHardLimit, BSoftLimit, CurSpace, IHardLimit, ISoftLimit, CurInodes, BTime, ITime uint64
	Valid                                                                             uint32
	_                                                                                 uint32
}

// fsDiskQuota is struct fs_disk_quota (112 bytes).
type fsDiskQuota struct {
	Version      int8
	Flags        int8
	FieldMask    uint16
	ID           uint32
	BlkHardLimit uint64
	BlkSoftLimit uint64
	InoHardLimit uint64
	InoSoftLimit uint64
	BCount       uint64
	ICount       uint64
	_            [56]byte // timers, warnings, realtime limits and padding
}

// fsQuotaStatV is struct fs_quota_statv (160 bytes).
type fsQuotaStatV struct {
	Version int8
	_       uint8
	Flags   uint16
	_       [156]byte
}

func quotactl(cmd uint32, device string, id uint32, addr unsafe.Pointer) error {
	p, err := unix.BytePtrFromString(device)
	if err != nil {
		return err
	}
	// QCMD(cmd, PRJQUOTA)
	_, _, errno := unix.Syscall6(unix.SYS_QUOTACTL, uintptr(cmd<<8|prjQuota), uintptr(unsafe.Pointer(p)), uintptr(id), uintptr(addr), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// quotaState is what the kernel says of device's project quotas: counted,
// and limits enforced. Q_XGETQSTATV answers for ext4 as for XFS (both
// implement the quota layer's get_state).
func quotaState(device string) (counted, enforced bool, err error) {
	st := fsQuotaStatV{Version: fsQStatVVersion1}
	if err := quotactl(qXGetQStatV, device, 0, unsafe.Pointer(&st)); err != nil {
		return false, false, fmt.Errorf("quotactl Q_XGETQSTATV %s: %w", device, err)
	}
	return st.Flags&fsQuotaPDQAcct != 0, st.Flags&fsQuotaPDQEnfd != 0, nil
}

// readQuota is project id's block limit and use on fsys, in bytes. XFS
// speaks its own interface, in 512-byte basic blocks (Q_XGETQUOTA; an ID
// it has no record of is ENOENT); ext4 the generic one, whose limits are
// in 1 KiB blocks and whose use is in bytes (Q_GETQUOTA).
func readQuota(fsys filesystem, id uint32) (quotaUse, error) {
	if fsys.fstype == "xfs" {
		var d fsDiskQuota
		err := quotactl(qXGetQuota, fsys.device, id, unsafe.Pointer(&d))
		if errors.Is(err, unix.ENOENT) {
			return quotaUse{}, nil
		}
		if err != nil {
			return quotaUse{}, fmt.Errorf("quotactl Q_XGETQUOTA %s project %d: %w", fsys.device, id, err)
		}
		return quotaUse{limit: d.BlkHardLimit * 512, space: d.BCount * 512, inodes: d.ICount,
			otherLimits: d.BlkSoftLimit != 0 || d.InoHardLimit != 0 || d.InoSoftLimit != 0}, nil
	}
	var d ifDqblk
	if err := quotactl(qGetQuota, fsys.device, id, unsafe.Pointer(&d)); err != nil {
		return quotaUse{}, fmt.Errorf("quotactl Q_GETQUOTA %s project %d: %w", fsys.device, id, err)
	}
	return quotaUse{limit: d.BHardLimit * 1024, space: d.CurSpace, inodes: d.CurInodes,
		otherLimits: d.BSoftLimit != 0 || d.IHardLimit != 0 || d.ISoftLimit != 0}, nil
}

// writeQuotaLimit sets project id's hard block limit on fsys to limit
// bytes (a multiple of limitUnit(fsys.fstype); 0: none) and clears its
// soft one: Q_XSETQLIM for XFS, Q_SETQUOTA for ext4, in their units.
func writeQuotaLimit(fsys filesystem, id uint32, limit uint64) error {
	if fsys.fstype == "xfs" {
		d := fsDiskQuota{Version: fsDquotVersion, Flags: fsProjQuota, FieldMask: fsDQBSoft | fsDQBHard, ID: id, BlkHardLimit: limit / 512}
		if err := quotactl(qXSetQLim, fsys.device, id, unsafe.Pointer(&d)); err != nil {
			return fmt.Errorf("quotactl Q_XSETQLIM %s project %d: %w", fsys.device, id, err)
		}
		return nil
	}
	d := ifDqblk{BHardLimit: limit / 1024, Valid: qifBLimits}
	if err := quotactl(qSetQuota, fsys.device, id, unsafe.Pointer(&d)); err != nil {
		return fmt.Errorf("quotactl Q_SETQUOTA %s project %d: %w", fsys.device, id, err)
	}
	return nil
}

// deviceOf is the device number of path's filesystem and its
// "major:minor", as /proc/self/mountinfo writes it.
func deviceOf(path string) (uint64, string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, "", &os.PathError{Op: "stat", Path: path, Err: err}
	}
	dev := uint64(st.Dev)
	return dev, fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)), nil
}

func openNoFollow(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

func getXattr(fd int, x *fsxattr) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fsIocFSGetXattr, uintptr(unsafe.Pointer(x))); errno != 0 {
		return errno
	}
	return nil
}

// readProject is the project ID of path (a directory or a regular file).
func readProject(path string) (uint32, error) {
	fd, err := openNoFollow(path)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var x fsxattr
	if err := getXattr(fd, &x); err != nil {
		return 0, &os.PathError{Op: "ioctl FS_IOC_FSGETXATTR", Path: path, Err: err}
	}
	return x.Projid, nil
}

// writeProject puts path, when it is a directory or a regular file on
// device dev, in project id (a directory also with PROJINHERIT, so what
// is made in it joins); false when path is something else, left alone.
func writeProject(path string, id uint32, dev uint64) (bool, error) {
	fd, err := openNoFollow(path)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	kind := st.Mode & unix.S_IFMT
	if uint64(st.Dev) != dev || (kind != unix.S_IFDIR && kind != unix.S_IFREG) {
		return false, nil
	}
	var x fsxattr
	if err := getXattr(fd, &x); err != nil {
		return false, &os.PathError{Op: "ioctl FS_IOC_FSGETXATTR", Path: path, Err: err}
	}
	x.Projid = id
	if kind == unix.S_IFDIR {
		x.Xflags |= fsXflagProjInherit
	}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fsIocFSSetXattr, uintptr(unsafe.Pointer(&x))); errno != 0 {
		return false, &os.PathError{Op: "ioctl FS_IOC_FSSETXATTR", Path: path, Err: errno}
	}
	return true, nil
}
