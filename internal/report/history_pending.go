package report

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
)

// PendingSuffix names the file beside a history that lists, one id a line,
// the campaigns whose entries are in the history but not yet in the
// results database (history.jsonl.pending).
const PendingSuffix = ".pending"

// MarkPending adds ids to the pending list of the history at hist.
func MarkPending(hist string, ids []string) error {
	return updatePending(hist, func(have []string) []string {
		for _, id := range ids {
			if !slices.Contains(have, id) {
				have = append(have, id)
			}
		}
		return have
	})
}

// ClearPending removes ids from the pending list of the history at hist.
// An emptied list stays as an empty file: removing it could lose the
// campaigns of a writer waiting on its lock.
func ClearPending(hist string, ids []string) error {
	if _, err := os.Stat(hist + PendingSuffix); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return updatePending(hist, func(have []string) []string {
		return slices.DeleteFunc(have, func(id string) bool { return slices.Contains(ids, id) })
	})
}

// Pending returns the campaigns pending in the history at hist.
func Pending(hist string) ([]string, error) {
	b, err := os.ReadFile(hist + PendingSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pending campaigns: %w", err)
	}
	return parsePending(b), nil
}

func parsePending(b []byte) []string {
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// updatePending rewrites the pending list under an exclusive flock of the
// list itself, so two Terraform resources marking and clearing at once do
// not lose each other's campaigns.
func updatePending(hist string, change func([]string) []string) error {
	path := hist + PendingSuffix
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open pending campaigns: %w", err)
	}
	lock, err := filelock.Wait(f, filelock.Exclusive)
	if err != nil {
		f.Close()
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer lock.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && st.Size() > 0 {
		return fmt.Errorf("read %s: %w", path, err)
	}
	ids := change(parsePending(b))
	if err := f.Truncate(0); err != nil {
		return err
	}
	if len(ids) == 0 {
		return f.Sync()
	}
	if _, err := f.WriteAt([]byte(strings.Join(ids, "\n")+"\n"), 0); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Sync()
}
