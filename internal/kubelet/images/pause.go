package images

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// PauseRef is the name of the built-in pod sandbox image.
const PauseRef = "orch.dev/pause:1"

// PauseArchs are the architectures of the built-in pause image (GOARCH
// names; arm is ARMv7).
var PauseArchs = []string{"amd64", "arm64", "arm"}

// WritePause writes the pause image as an OCI image layout tarball whose
// one name, PauseRef, is a multi-platform index of a manifest for each of
// PauseArchs (containerd unpacks the one for its own platform). Its only
// file is /pause, a static program of a few hundred bytes that sets
// SIGCHLD to be ignored (so the kernel reaps the children it inherits when
// the pod shares its PID namespace) and then sleeps until it is killed.
// containerd stops a sandbox with SIGKILL, so it needs no signal handler.
func WritePause(w io.Writer) error {
	var imgs []Image
	for _, arch := range PauseArchs {
		program, err := pauseProgram(arch)
		if err != nil {
			return err
		}
		imgs = append(imgs, Image{
			Files:  []File{{Path: "/pause", Mode: 0o755, Data: program}},
			Config: Config{Arch: arch, Entrypoint: []string{"/pause"}, User: "65535:65535"},
		})
	}
	return WriteIndex(w, PauseRef, imgs)
}

// amd64Pause is the machine code of the x86-64 pause program; the 8-byte
// words after it are the struct sigaction it passes (handler SIG_IGN).
var amd64Pause = []byte{
	0xb8, 0x0d, 0x00, 0x00, 0x00, // mov eax, 13 (rt_sigaction)
	0xbf, 0x11, 0x00, 0x00, 0x00, // mov edi, 17 (SIGCHLD)
	0x48, 0x8d, 0x35, 0x17, 0x00, 0x00, 0x00, // lea rsi, [rip+23] (the sigaction below)
	0x31, 0xd2, // xor edx, edx (no old action)
	0x41, 0xba, 0x08, 0x00, 0x00, 0x00, // mov r10d, 8 (sigset size)
	0x0f, 0x05, // syscall
	0xb8, 0x22, 0x00, 0x00, 0x00, // loop: mov eax, 34 (pause)
	0x0f, 0x05, // syscall
	0xeb, 0xf7, // jmp loop
	0x00, 0x00, 0x00, 0x00, // padding to the sigaction at offset 40
	0x01, 0, 0, 0, 0, 0, 0, 0, // sa_handler = SIG_IGN
	0, 0, 0, 0, 0, 0, 0, 0, // sa_flags
	0, 0, 0, 0, 0, 0, 0, 0, // sa_restorer
	0, 0, 0, 0, 0, 0, 0, 0, // sa_mask
}

// arm64Pause is the machine code of the AArch64 pause program (words,
// little-endian); arm64 has no pause(2), so it waits in ppoll with no
// file descriptors and no timeout. The sigaction follows the code.
var arm64Pause = words(
	0xd28010c8,    // movz x8, #134 (rt_sigaction)
	0xd2800220,    // movz x0, #17 (SIGCHLD)
	0x10000181,    // adr x1, .+48 (the sigaction below)
	0xd2800002,    // movz x2, #0 (no old action)
	0xd2800103,    // movz x3, #8 (sigset size)
	0xd4000001,    // svc #0
	0xd2800928,    // loop: movz x8, #73 (ppoll)
	0xd2800000,    // movz x0, #0 (no fds)
	0xd2800001,    // movz x1, #0
	0xd2800002,    // movz x2, #0 (no timeout)
	0xd2800003,    // movz x3, #0 (no sigmask)
	0xd2800004,    // movz x4, #0
	0xd4000001,    // svc #0
	0x17fffff9,    // b loop
	0x00000001, 0, // sa_handler = SIG_IGN
	0, 0, // sa_flags
	0, 0, // sa_restorer
	0, 0, // sa_mask
)

// words is the little-endian encoding of ws.
func words(ws ...uint32) []byte {
	out := make([]byte, 0, 4*len(ws))
	for _, w := range ws {
		out = binary.LittleEndian.AppendUint32(out, w)
	}
	return out
}

// armPause is the machine code of the 32-bit ARM (EABI) pause program:
// rt_sigaction, then pause(2) in a loop; the sigaction follows the code.
var armPause = words(
	0xe3a070ae, // mov r7, #174 (rt_sigaction)
	0xe3a00011, // mov r0, #17 (SIGCHLD)
	0xe28f1014, // add r1, pc, #20 (the sigaction below: pc is this + 8)
	0xe3a02000, // mov r2, #0 (no old action)
	0xe3a03008, // mov r3, #8 (sigset size)
	0xef000000, // svc #0
	0xe3a0701d, // loop: mov r7, #29 (pause)
	0xef000000, // svc #0
	0xeafffffc, // b loop
	0x00000001, // sa_handler = SIG_IGN
	0,          // sa_flags
	0,          // sa_restorer
	0, 0,       // sa_mask
)

// pauseProgram wraps the code for arch in a minimal static ELF executable:
// one header, one loadable segment, no sections.
func pauseProgram(arch string) ([]byte, error) {
	var code []byte
	var machine uint16
	align := uint64(0x1000)
	switch arch {
	case "amd64":
		code, machine = amd64Pause, 0x3e
	case "arm64":
		code, machine = arm64Pause, 0xb7
		align = 0x10000 // arm64 kernels may use 64 KiB pages
	case "arm":
		return elf32(armPause, 0x28, 0x05000400) // EM_ARM; EABI version 5, hard float
	default:
		return nil, fmt.Errorf("orch has a built-in pause image for amd64, arm64 and arm only, not for %s", arch)
	}
	const base, headers = 0x400000, 64 + 56
	size := uint64(headers + len(code))
	var elf bytes.Buffer
	elf.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	le := binary.LittleEndian
	for _, v := range []any{
		uint16(2), machine, uint32(1), // executable, machine, version
		uint64(base + headers), uint64(64), uint64(0), // entry, program headers, no sections
		uint32(0), uint16(64), uint16(56), uint16(1), // flags, header sizes, one program header
		uint16(0), uint16(0), uint16(0), // no section headers
		uint32(1), uint32(5), uint64(0), // PT_LOAD, read+execute, from file offset 0
		uint64(base), uint64(base), size, size, align, // addresses, sizes, alignment
	} {
		if err := binary.Write(&elf, le, v); err != nil {
			return nil, err
		}
	}
	elf.Write(code)
	return elf.Bytes(), nil
}

// elf32 is pauseProgram's 32-bit ELF (little-endian) for code.
func elf32(code []byte, machine uint16, flags uint32) ([]byte, error) {
	const base, headers = 0x10000, 52 + 32
	size := uint32(headers + len(code))
	var elf bytes.Buffer
	elf.Write([]byte{0x7f, 'E', 'L', 'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	for _, v := range []any{
		uint16(2), machine, uint32(1), // executable, machine, version
		uint32(base + headers), uint32(52), uint32(0), // entry, program headers, no sections
		flags, uint16(52), uint16(32), uint16(1), // flags, header sizes, one program header
		uint16(0), uint16(0), uint16(0), // no section headers
		uint32(1), uint32(0), uint32(base), uint32(base), // PT_LOAD from file offset 0 at base
		size, size, uint32(5), uint32(0x10000), // sizes, read+execute, alignment
	} {
		if err := binary.Write(&elf, binary.LittleEndian, v); err != nil {
			return nil, err
		}
	}
	elf.Write(code)
	return elf.Bytes(), nil
}
