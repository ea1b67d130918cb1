package testhost

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// NetnsInode is the inode of the network namespace at path
// (/proc/PID/ns/net, /run/netns/NAME); 0 when it cannot be read.
func NetnsInode(path string) uint64 {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0
	}
	return st.Ino
}

// NetnsInode is the inode of the host's network namespace.
func (h *Host) NetnsInode() uint64 { return NetnsInode(filepath.Join("/run/netns", h.Namespace)) }

// ProcessWatch samples, ten times a second until Stop, where the machine's
// processes of some names run: by network namespace, those whose command
// line holds one of the markers (other tests run the same programs).
type ProcessWatch struct {
	comms, markers []string
	stop, done     chan struct{}
	mu             sync.Mutex
	seen           map[string]map[uint64]int
}

// WatchProcesses starts a ProcessWatch of the processes named comms.
func WatchProcesses(comms, markers []string) *ProcessWatch {
	w := &ProcessWatch{comms: comms, markers: markers, stop: make(chan struct{}), done: make(chan struct{}), seen: map[string]map[uint64]int{}}
	go w.run()
	return w
}

func (w *ProcessWatch) run() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		files, _ := filepath.Glob("/proc/[0-9]*/comm")
		for _, f := range files {
			b, _ := os.ReadFile(f)
			comm := strings.TrimSpace(string(b))
			if !slices.Contains(w.comms, comm) {
				continue
			}
			proc := filepath.Dir(f)
			cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
			if !slices.ContainsFunc(w.markers, func(m string) bool { return strings.Contains(string(cmdline), m) }) {
				continue
			}
			ns := NetnsInode(filepath.Join(proc, "ns", "net"))
			if ns == 0 {
				continue // gone meanwhile
			}
			w.mu.Lock()
			if w.seen[comm] == nil {
				w.seen[comm] = map[uint64]int{}
			}
			w.seen[comm][ns]++
			w.mu.Unlock()
		}
	}
}

// Stop ends the watch and returns, by process name, how many times a
// process was seen in each network namespace (by inode).
func (w *ProcessWatch) Stop() map[string]map[uint64]int {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}
