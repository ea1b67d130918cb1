//go:build unix

package proc

import (
	"errors"
	"os/exec"
	"syscall"
)

// Start sets cmd up to run in a process group of its own (so the whole
// tree can be signalled), as cred when not nil, and, on Linux, to be killed
// when its parent dies.
func Start(cmd *exec.Cmd, cred *Credential) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if cred != nil {
		attr.Credential = &syscall.Credential{Uid: cred.Uid, Gid: cred.Gid}
	}
	setDeathSignal(attr)
	cmd.SysProcAttr = attr
}

// SignalGroup sends sig to the process group led by pid.
func SignalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}

// Signal sends sig to one process; ErrGone when it does not exist.
func Signal(pid int, sig syscall.Signal) error {
	err := syscall.Kill(pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return ErrGone
	}
	return err
}

// Alive reports whether process pid exists (signal 0 checks without
// sending anything; EPERM is another user's live process).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
