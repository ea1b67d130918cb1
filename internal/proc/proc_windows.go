package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Start runs cmd in a process group of its own; Windows has no user switch
// of this kind, and cred must be nil.
func Start(cmd *exec.Cmd, cred *Credential) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// SignalGroup ends the process pid: Windows cannot deliver a Unix signal to
// a group, so any signal kills the leader.
func SignalGroup(pid int, sig syscall.Signal) error {
	return Signal(pid, sig)
}

// Signal kills process pid; ErrGone when it does not exist.
func Signal(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return ErrGone
	}
	if sig == 0 {
		return nil
	}
	if err := p.Kill(); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return ErrGone
		}
		return err
	}
	return nil
}

// Alive reports whether process pid exists.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.FindProcess(pid)
	return err == nil
}
