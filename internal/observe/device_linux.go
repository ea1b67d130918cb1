package observe

import "syscall"

// deviceOf returns the major and minor number of the device holding path.
func deviceOf(path string) (major, minor uint64, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, false
	}
	return unixMajor(st.Dev), unixMinor(st.Dev), true
}

// unixMajor and unixMinor split a Linux device number (glibc's encoding).
func unixMajor(dev uint64) uint64 { return ((dev >> 8) & 0xfff) | ((dev >> 32) &^ 0xfff) }
func unixMinor(dev uint64) uint64 { return (dev & 0xff) | ((dev >> 12) &^ 0xff) }
