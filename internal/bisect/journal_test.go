package bisect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestJournalResume(t *testing.T) {
	dir := t.TempDir()
	h := journalHeader{Key: "k1", Definition: []string{"--good=a", "--bad=b"}, Good: "aaa", Bad: "bbb", StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	j, err := openJournal(dir, h, false)
	if err != nil {
		t.Fatal(err)
	}
	j.append(journalLine{Build: &buildRecord{Commit: "aaa", Build: Build{BuildKey: "kg", BinDir: "/g/bin", Seconds: 3}}})
	j.append(journalLine{Build: &buildRecord{Commit: "ccc", Build: Build{Error: "make failed"}}})
	j.append(journalLine{Endpoints: &Endpoints{Outcome: EndpointsConfirmed, Rounds: 1}})
	j.append(journalLine{Step: &Step{N: 1, Position: 2, Class: ClassGood}})
	j.close()
	// A crash in the middle of a line.
	f, _ := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"step":{"n":2,`)
	f.Close()

	later := h
	later.StartedAt = h.StartedAt.Add(time.Hour)
	j, err = openJournal(dir, later, false)
	if err != nil {
		t.Fatal(err)
	}
	if !j.startedAt.Equal(h.StartedAt) || len(j.builds) != 2 || j.builds["ccc"].Error != "make failed" || j.endpoints == nil || len(j.steps) != 1 {
		t.Fatalf("resumed journal: started %v, builds %+v, endpoints %+v, steps %+v", j.startedAt, j.builds, j.endpoints, j.steps)
	}
	j.append(journalLine{Step: &Step{N: 2, Position: 3, Class: ClassBad}})
	j.close()
	builds, err := ReadBuilds(dir)
	if err != nil || builds["aaa"].BinDir != "/g/bin" {
		t.Errorf("ReadBuilds = %+v, %v", builds, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, JournalFile))
	if n := strings.Count(string(b), "\n"); n != 6 || strings.Contains(string(b), `{"step":{"n":2,{`) {
		t.Errorf("journal after the torn line:\n%s", b)
	}

	refused := []struct {
		edit func(*journalHeader)
		want string
	}{
		{func(h *journalHeader) { h.Key, h.Definition = "k2", []string{"--good=a", "--bad=c"} }, `the journal has "--bad=b" where this bisect has "--bad=c"`},
		{func(h *journalHeader) { h.Key = "k2" }, "the campaign of each step differs"},
		{func(h *journalHeader) { h.Bad = "ddd" }, "the refs now name aaa and ddd"},
	}
	for _, r := range refused {
		h2 := h
		r.edit(&h2)
		if _, err := openJournal(dir, h2, false); err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("openJournal of another bisect = %v, want %q", err, r.want)
		}
	}
	h2 := h
	h2.Key = "k2"
	j, err = openJournal(dir, h2, true)
	if err != nil {
		t.Fatalf("fresh: %v", err)
	}
	j.close()
	if len(j.steps) != 0 {
		t.Errorf("a fresh journal replayed %d steps", len(j.steps))
	}
	if old, _ := filepath.Glob(filepath.Join(dir, JournalFile+".*.old")); len(old) != 1 {
		t.Errorf("the old journal was not kept aside: %v", old)
	}
}
