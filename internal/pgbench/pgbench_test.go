package pgbench

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		got, err := ParseMode(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v, want %q, nil", m, got, err, m)
		}
	}
	_, err := ParseMode("tpcc")
	if err == nil {
		t.Fatal("ParseMode(tpcc) = nil error, want an error")
	}
	for _, want := range []string{`"tpcc"`, "select-only", "tpcb", "simple-update", "custom"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMode(tpcc) error %q does not mention %s", err, want)
		}
	}
}

func TestParseProtocol(t *testing.T) {
	for _, p := range []string{"simple", "extended", "prepared"} {
		if got, err := ParseProtocol(p); err != nil || got != p {
			t.Errorf("ParseProtocol(%q) = %q, %v, want %q, nil", p, got, err, p)
		}
	}
	if _, err := ParseProtocol("binary"); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Errorf("ParseProtocol(binary) error = %v, want one naming binary", err)
	}
}

func validOptions() RunOptions {
	return RunOptions{Mode: ModeSelectOnly, Clients: 4, Threads: 2, Duration: 60 * time.Second}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*RunOptions)
		wantErr string // "" means valid
	}{
		{"valid", func(o *RunOptions) {}, ""},
		{"custom with script", func(o *RunOptions) { o.Mode, o.Script = ModeCustom, "/tmp/x.sql" }, ""},
		{"sampled log", func(o *RunOptions) { o.LogPrefix, o.SamplingRate = "/tmp/tx", 0.1 }, ""},
		{"default threads", func(o *RunOptions) { o.Threads = 0 }, ""},
		{"unknown mode", func(o *RunOptions) { o.Mode = "tpcc" }, "tpcc"},
		{"empty mode", func(o *RunOptions) { o.Mode = "" }, "mode"},
		{"custom without script", func(o *RunOptions) { o.Mode = ModeCustom }, "script"},
		{"script without custom", func(o *RunOptions) { o.Script = "/tmp/x.sql" }, "custom"},
		{"zero clients", func(o *RunOptions) { o.Clients = 0 }, "clients = 0"},
		{"negative threads", func(o *RunOptions) { o.Threads = -1 }, "threads = -1"},
		{"threads over clients", func(o *RunOptions) { o.Threads = 8 }, "exceeds clients"},
		{"zero duration", func(o *RunOptions) { o.Duration = 0 }, "duration 0s"},
		{"fractional duration", func(o *RunOptions) { o.Duration = 1500 * time.Millisecond }, "whole seconds"},
		{"bad protocol", func(o *RunOptions) { o.Protocol = "binary" }, "binary"},
		{"sampling without log", func(o *RunOptions) { o.SamplingRate = 0.5 }, "log prefix"},
		{"sampling above one", func(o *RunOptions) { o.LogPrefix, o.SamplingRate = "/tmp/tx", 2 }, "sampling rate 2"},
		{"progress", func(o *RunOptions) { o.Progress = 5 * time.Second }, ""},
		{"negative progress", func(o *RunOptions) { o.Progress = -time.Second }, "progress interval -1s"},
		{"fractional progress", func(o *RunOptions) { o.Progress = 500 * time.Millisecond }, "progress interval 500ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.edit(&o)
			err := o.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Validate() = nil, want an error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("Validate() = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		o    RunOptions
		want []string
	}{
		{"select-only", RunOptions{Mode: ModeSelectOnly, Clients: 4, Threads: 2, Duration: time.Minute},
			[]string{"-b", "select-only", "-c", "4", "-j", "2", "-T", "60"}},
		{"tpcb prepared no vacuum", RunOptions{Mode: ModeTPCB, Clients: 1, Duration: 10 * time.Second, Protocol: "prepared", NoVacuum: true},
			[]string{"-b", "tpcb-like", "-c", "1", "-T", "10", "-M", "prepared", "-n"}},
		{"simple-update with log", RunOptions{Mode: ModeSimpleUpdate, Clients: 2, Threads: 2, Duration: 2 * time.Second, LogPrefix: "/o/tx"},
			[]string{"-b", "simple-update", "-c", "2", "-j", "2", "-T", "2", "--log", "--log-prefix=/o/tx"}},
		{"custom sampled progress extra", RunOptions{Mode: ModeCustom, Script: "/s.sql", Clients: 8, Threads: 4, Duration: 30 * time.Second, LogPrefix: "/o/tx", SamplingRate: 0.01, Progress: time.Second, ExtraArgs: []string{"-r"}},
			[]string{"-f", "/s.sql", "-c", "8", "-j", "4", "-T", "30", "-P", "1", "--log", "--log-prefix=/o/tx", "--sampling-rate=0.01", "-r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.o.Validate(); err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			if got := tt.o.Args(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Args() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInitArgs(t *testing.T) {
	got, want := InitArgs(3000), []string{"-i", "-s", "3000", "-q"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("InitArgs(3000) = %q, want %q", got, want)
	}
}

func close(a, b, tol float64) bool {
	d := a - b
	return d <= tol && d >= -tol
}
