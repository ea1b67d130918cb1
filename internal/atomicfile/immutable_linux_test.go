package atomicfile

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// makeImmutable sets the immutable attribute on dir (chattr +i) until the
// test ends: nobody, root included, can create a file in it. It skips
// when the file system has no such attribute.
func makeImmutable(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Skipf("directory permissions are not enforced for this user, and %s has no attributes to make it immutable: %v", dir, err)
	}
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags|fsImmutable)); err != nil {
		t.Skipf("directory permissions are not enforced for this user, and %s cannot be made immutable: %v", dir, err)
	}
	t.Cleanup(func() {
		f, err := os.Open(dir)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags)); err != nil {
			t.Errorf("clear the immutable attribute of %s: %v", dir, err)
		}
	})
}

// fsImmutable is FS_IMMUTABLE_FL of linux/fs.h, the attribute chattr +i sets.
const fsImmutable = 0x00000010
