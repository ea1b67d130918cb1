package ec2host_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// TestRootVolumeOnImageRootDevice: the root volume asked for replaces the
// image's root, whatever device the image boots from. Ubuntu's images boot
// from /dev/sda1: a mapping for /dev/xvda there would attach an unused
// second volume beside an 8 GB root.
func TestRootVolumeOnImageRootDevice(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	for _, tc := range []struct {
		name       string
		spec       ec2host.Spec
		wantDevice string
	}{
		{"ubuntu by id", ec2host.Spec{ImageID: "ami-036841078a4b68e14"}, "/dev/sda1"},
		{"ubuntu by name", ec2host.Spec{ImageName: "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*", ImageOwners: []string{"099720109477"}}, "/dev/sda1"},
		{"debian by name", ec2host.Spec{ImageName: imageName, ImageOwners: []string{debianOwn}}, "/dev/xvda"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.InstanceType = "t3.micro"
			spec.RootVolume = ec2host.RootVolume{SizeGB: 2000, Type: "gp3"}
			in, err := c.Launch(ctx, spec)
			if err != nil {
				t.Fatalf("launch: %v", err)
			}
			t.Cleanup(func() { c.Terminate(ctx, in.ID) })
			got, _ := sim.Instance(in.ID)
			if got.RootDevice != tc.wantDevice {
				t.Errorf("root device %q, want %q", got.RootDevice, tc.wantDevice)
			}
			if len(got.Volumes) != 1 {
				t.Fatalf("volumes %+v, want exactly the root volume", got.Volumes)
			}
			if v := got.Volumes[0]; v.Device != tc.wantDevice || v.SizeGB != 2000 || v.Type != "gp3" {
				t.Errorf("root volume %+v, want %s 2000 GB gp3", v, tc.wantDevice)
			}
			desc, err := c.Describe(ctx, in.ID)
			if err != nil || desc == nil {
				t.Fatalf("describe: %v %v", desc, err)
			}
			if desc.RootDevice != tc.wantDevice {
				t.Errorf("described root device %q, want %q", desc.RootDevice, tc.wantDevice)
			}
		})
	}

	t.Run("another device adds a volume", func(t *testing.T) {
		in, err := c.Launch(ctx, ec2host.Spec{InstanceType: "t3.micro", ImageID: "ami-036841078a4b68e14",
			RootVolume: ec2host.RootVolume{DeviceName: "/dev/xvda", SizeGB: 100}})
		if err != nil {
			t.Fatalf("launch: %v", err)
		}
		t.Cleanup(func() { c.Terminate(ctx, in.ID) })
		got, _ := sim.Instance(in.ID)
		if len(got.Volumes) != 2 || got.Volumes[0].Device != "/dev/sda1" || got.Volumes[0].SizeGB != 8 || got.Volumes[1].Device != "/dev/xvda" {
			t.Errorf("volumes %+v, want the 8 GB root on /dev/sda1 and a second volume on /dev/xvda", got.Volumes)
		}
	})

	t.Run("smaller than the snapshot", func(t *testing.T) {
		before := len(sim.Instances())
		_, err := c.Launch(ctx, ec2host.Spec{InstanceType: "t3.micro", ImageID: "ami-036841078a4b68e14",
			RootVolume: ec2host.RootVolume{SizeGB: 4}})
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidBlockDeviceMapping" || !strings.Contains(err.Error(), "expect size >= 8GB") {
			t.Fatalf("launch with a 4 GB root = %v, want InvalidBlockDeviceMapping naming the 8 GB snapshot", err)
		}
		if n := len(sim.Instances()); n != before {
			t.Errorf("%d instances after a refused launch, want %d", n, before)
		}
	})

	t.Run("unknown image id", func(t *testing.T) {
		_, err := c.Launch(ctx, ec2host.Spec{InstanceType: "t3.micro", ImageID: "ami-00000000000000000"})
		if err == nil || !strings.Contains(err.Error(), "ami-00000000000000000") {
			t.Fatalf("launch of an unknown image = %v, want an error naming it", err)
		}
	})
}
