package provider

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
)

// reattachProvider serves the provider in this test process and returns the
// TF_REATTACH_PROVIDERS value with which a terraform process uses it, as
// terraform-plugin-testing does; the server stops when the test ends.
func reattachProvider(t *testing.T) string {
	t.Helper()
	// The in-process server would log every RPC at trace level to stderr.
	for _, v := range []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PROVIDER"} {
		t.Setenv(v, "ERROR")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	reattach := make(chan *plugin.ReattachConfig)
	closed := make(chan struct{})
	const addr = "registry.terraform.io/pgbench-tf/pgbench"
	go tf6server.Serve(addr, providerserver.NewProtocol6(New("test")()), tf6server.WithDebug(ctx, reattach, closed))
	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattach:
	case <-time.After(30 * time.Second):
		t.Fatal("provider server did not start")
	}
	env, err := json.Marshal(map[string]any{addr: map[string]any{
		"Protocol": string(rc.Protocol), "ProtocolVersion": rc.ProtocolVersion, "Pid": rc.Pid, "Test": true,
		"Addr": map[string]string{"Network": rc.Addr.Network(), "String": rc.Addr.String()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(env)
}

// terraformCmd is terraform args in dir, using the provider that
// reattachProvider serves (reattach is its TF_REATTACH_PROVIDERS value).
func terraformCmd(tf, dir, reattach string, args ...string) *exec.Cmd {
	cmd := exec.Command(tf, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+reattach, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	return cmd
}
