package images

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// PauseRef is the name of the built-in pod sandbox image.
const PauseRef = "orch.dev/pause:1"

// WritePause writes the pause image for arch as a docker-archive tarball.
// Its only file is /pause, a static program of a few hundred bytes that
// sets SIGCHLD to be ignored (so the kernel reaps the children it inherits
// when the pod shares its PID namespace) and then sleeps until it is killed.
// containerd stops a sandbox with SIGKILL, so it needs no signal handler.
func WritePause(w io.Writer, arch string) error {
	program, err := pauseProgram(arch)
	if err != nil {
		return err
	}
	return Write(w, PauseRef, []File{{Path: "/pause", Mode: 0o755, Data: program}},
		Config{Arch: arch, Entrypoint: []string{"/pause"}, User: "65535:65535"})
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
	default:
		return nil, fmt.Errorf("orch has a built-in pause image for amd64 and arm64 only, not for %s", arch)
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
