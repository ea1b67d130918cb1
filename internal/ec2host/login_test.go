package ec2host_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

func TestDefaultLoginUser(t *testing.T) {
	for name, want := range map[string]string{
		"debian-12-amd64-20241104-1921":                                      "admin",
		"ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20241109": "ubuntu",
		"al2023-ami-2023.6.20241111.0-kernel-6.1-x86_64":                     "ec2-user",
		"amzn2-ami-kernel-5.10-hvm-2.0.20241113.1-x86_64-gp2":                "ec2-user",
		"RHEL-9.4.0_HVM-20240605-x86_64-82-Hourly2-GP3":                      "ec2-user",
		"Rocky-9-EC2-Base-9.4-20240523.0.x86_64":                             "rocky",
		"my-tuned-postgres-image-2024":                                       "",
	} {
		if got := ec2host.DefaultLoginUser(ec2host.Image{Name: name}); got != want {
			t.Errorf("DefaultLoginUser(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestStockImageLogin: a stock Debian image answers root with cloud-init's
// forced command; WaitSSH reports what it said and which user to set, and
// the image's own user logs in and has root through sudo.
func TestStockImageLogin(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, 2*time.Minute)
	kp, _ := ec2host.GenerateKeyPair()
	if _, err := c.ImportKeyPair(ctx, "stock", kp.PublicKeyLine, nil); err != nil {
		t.Fatal(err)
	}
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: "t3.micro", ImageName: imageName, ImageOwners: []string{debianOwn}, KeyName: "stock"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Terminate(ctx, in.ID) })
	if got := ec2host.DefaultLoginUser(in.Image); got != "admin" {
		t.Fatalf("login user of %s (%s) = %q, want admin", in.Image.ID, in.Image.Name, got)
	}
	run, err := c.WaitRunning(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.WaitSSH(ctx, run, ec2host.SSHOptions{User: "root", PrivateKey: kp.PrivateKeyPEM, Within: 10 * time.Second, TrustOnFirstUse: true})
	var le *ec2host.LoginRefusedError
	if !errors.As(err, &le) {
		t.Fatalf("WaitSSH as root on a stock image = %v, want a LoginRefusedError", err)
	}
	if le.Suggested != "admin" || !strings.Contains(le.Said, `Please login as the user "admin" rather than the user "root".`) {
		t.Errorf("refusal = %+v, want the server's text and admin suggested", le)
	}
	if msg := err.Error(); !strings.Contains(msg, `ssh_user = "admin"`) || !strings.Contains(msg, in.ID) {
		t.Errorf("refusal message %q does not name the instance and the user to set", msg)
	}
	ex, err := c.WaitSSH(ctx, run, ec2host.SSHOptions{User: "admin", PrivateKey: kp.PrivateKeyPEM, Within: 10 * time.Second, TrustOnFirstUse: true})
	if err != nil {
		t.Fatalf("WaitSSH as admin: %v", err)
	}
	res, err := ex.Run(ctx, remote.Command{Args: []string{"id", "-u"}})
	ex.Close()
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
		t.Fatalf("id -u as admin through sudo = %q, %v; want 0", res.Stdout, err)
	}
	if info, _ := sim.Instance(in.ID); info.Host == nil || info.Host.LoginUser != "admin" {
		t.Errorf("sim instance host %+v, want login user admin", info.Host)
	}
}

// TestCustomImageAdmitsRoot: an image of no known family (one's own) that
// admits root logs in as root, with no sudo.
func TestCustomImageAdmitsRoot(t *testing.T) {
	custom := ec2sim.Image{ID: "ami-0123456789abcdef0", Name: "my-tuned-postgres-image-2024", OwnerID: "123456789012",
		Created: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), Architecture: "x86_64"}
	_, c := env(t, ec2sim.Options{Images: []ec2sim.Image{custom}})
	ctx := ctxFor(t, time.Minute)
	kp, _ := ec2host.GenerateKeyPair()
	if _, err := c.ImportKeyPair(ctx, "custom", kp.PublicKeyLine, nil); err != nil {
		t.Fatal(err)
	}
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: "t3.micro", ImageID: custom.ID, KeyName: "custom"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Terminate(ctx, in.ID) })
	if got := ec2host.DefaultLoginUser(in.Image); got != "" {
		t.Fatalf("login user of a custom image = %q, want none known", got)
	}
	run, err := c.WaitRunning(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := c.WaitSSH(ctx, run, ec2host.SSHOptions{User: "root", PrivateKey: kp.PrivateKeyPEM, Within: 10 * time.Second, TrustOnFirstUse: true})
	if err != nil {
		t.Fatalf("WaitSSH as root on an image that admits root: %v", err)
	}
	ex.Close()
}
