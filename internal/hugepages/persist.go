package hugepages

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
)

// PersistFile is the sysctl.d file --persist writes, relative to the root.
const PersistFile = "etc/sysctl.d/60-pgbench-hugepages.conf"

func backup(path string) (FileBackup, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return FileBackup{Path: path}, nil
	}
	if err != nil {
		return FileBackup{}, fmt.Errorf("read %s: %w", path, err)
	}
	return FileBackup{Path: path, Existed: true, Content: string(b)}, nil
}

// restore puts a file back as it was: replaced atomically, or removed when
// it did not exist.
func (b FileBackup) restore() error {
	if !b.Existed {
		if err := os.Remove(b.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", b.Path, err)
		}
		return nil
	}
	if err := atomicfile.WriteFile(b.Path, []byte(b.Content), 0o644); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// restoreSysctl writes a sysctl's value back in place: a /proc/sys file
// cannot be replaced, only written.
func (b FileBackup) restoreSysctl() error {
	if err := os.WriteFile(b.Path, []byte(b.Content), 0o644); err != nil {
		return fmt.Errorf("restore %s: %w", b.Path, err)
	}
	return nil
}

// extras applies --persist and --overcommit after a successful reserve and
// records what they changed in st (keeping earlier records) and the state file.
func (k Kernel) extras(opts ReserveOptions, st *State) error {
	if opts.Persist {
		if opts.Node >= 0 || opts.PageSize != DefaultPageSize {
			return fmt.Errorf("--persist covers the global pool of %s pages only", SizeName(DefaultPageSize))
		}
		path := filepath.Join(k.root(), PersistFile)
		if st.Persist == nil {
			b, err := backup(path)
			if err != nil {
				return err
			}
			st.Persist = &b
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("persist: %w", err)
		}
		content := fmt.Sprintf("# Written by pgbench-runner hugepages reserve --persist.\nvm.nr_hugepages = %d\n", opts.Pages)
		if err := atomicfile.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("persist: %w", err)
		}
	}
	if opts.OvercommitRatio > 0 {
		if opts.OvercommitRatio > 100 {
			return fmt.Errorf("overcommit ratio %d: want 1..100", opts.OvercommitRatio)
		}
		set := []struct{ name, value string }{
			// Ratio first: with mode 2 already on, a lower limit applies at once.
			{"proc/sys/vm/overcommit_ratio", strconv.Itoa(opts.OvercommitRatio)},
			{"proc/sys/vm/overcommit_memory", "2"},
		}
		recorded := map[string]bool{}
		for _, b := range st.Sysctls {
			recorded[b.Path] = true
		}
		for _, s := range set {
			path := filepath.Join(k.root(), s.name)
			if !recorded[path] {
				b, err := backup(path)
				if err != nil {
					return err
				}
				if !b.Existed {
					return fmt.Errorf("overcommit: %s does not exist", path)
				}
				st.Sysctls = append(st.Sysctls, b)
			}
		}
		if opts.StateFile != "" {
			if err := writeState(opts.StateFile, *st); err != nil {
				return err
			}
		}
		for _, s := range set {
			path := filepath.Join(k.root(), s.name)
			if err := os.WriteFile(path, []byte(s.value+"\n"), 0o644); err != nil {
				return fmt.Errorf("overcommit: write %s to %s: %w", s.value, path, err)
			}
		}
	}
	if opts.StateFile != "" {
		return writeState(opts.StateFile, *st)
	}
	return nil
}

// restoreExtras undoes extras, sysctls in reverse order.
func restoreExtras(st *State) error {
	var errs []error
	for i := len(st.Sysctls) - 1; i >= 0; i-- {
		errs = append(errs, st.Sysctls[i].restoreSysctl())
	}
	if st.Persist != nil {
		errs = append(errs, st.Persist.restore())
	}
	return errors.Join(errs...)
}
