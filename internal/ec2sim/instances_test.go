package ec2sim_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// and that a terminated instance drops out of sight after a while.
func TestInstanceWireFormat(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{TerminatedVisibleFor: 500 * time.Millisecond})
	c := client(t, sim)
	ctx := context.Background()
	ud := base64.StdEncoding.EncodeToString([]byte("#!/bin/sh\nshutdown -P +90\n"))
	out, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: aws.String(image), InstanceType: "m6i.metal", MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		UserData: aws.String(ud), ClientToken: aws.String("tok-1"),
		Placement: &types.Placement{AvailabilityZone: aws.String("us-east-2c")},
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance,
			Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}, {Key: aws.String("b"), Value: aws.String("2")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || aws.ToString(out.ReservationId) == "" || aws.ToString(out.OwnerId) == "" {
		t.Fatalf("RunInstances = %+v, want one instance in a reservation", out)
	}
	i := out.Instances[0]
	id := aws.ToString(i.InstanceId)
	if i.State.Name != types.InstanceStateNamePending || aws.ToInt32(i.State.Code) != 0 || aws.ToString(i.PrivateIpAddress) == "" ||
		aws.ToString(i.Placement.AvailabilityZone) != "us-east-2c" || aws.ToString(i.ClientToken) != "tok-1" || len(i.Tags) != 2 ||
		i.LaunchTime == nil || i.InstanceType != "m6i.metal" || aws.ToString(i.ImageId) != image || len(i.BlockDeviceMappings) != 1 {
		t.Errorf("launched instance = %+v, want pending with address, zone, token, 2 tags, launch time, type, image, root volume", i)
	}
	if info, _ := sim.Instance(id); info.DeadMan != 90*time.Minute || info.ShutdownBehavior != "stop" {
		t.Errorf("sim read dead-man %v, behaviour %s; want 1h30m0s, stop", info.DeadMan, info.ShutdownBehavior)
	}
	var running types.Instance
	for deadline := time.Now().Add(10 * time.Second); ; {
		d, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{
			{Name: aws.String("tag:a"), Values: []string{"1"}},
			{Name: aws.String("instance-state-name"), Values: []string{"running"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Reservations) == 1 {
			running = d.Reservations[0].Instances[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s never listed as running", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if aws.ToInt32(running.State.Code) != 16 || aws.ToString(running.PublicIpAddress) == "" || aws.ToString(running.PrivateDnsName) == "" {
		t.Errorf("running instance = %+v, want code 16 with a public address and a private DNS name", running)
	}
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: []types.Tag{{Key: aws.String("c"), Value: aws.String("3")}}}); err != nil {
		t.Fatal(err)
	}
	if info, _ := sim.Instance(id); info.Tags["c"] != "3" {
		t.Errorf("tags after CreateTags = %v, want c=3", info.Tags)
	}
	term, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if sc := term.TerminatingInstances[0]; sc.CurrentState.Name != types.InstanceStateNameShuttingDown || sc.PreviousState.Name != types.InstanceStateNameRunning {
		t.Errorf("state change = %s -> %s, want running -> shutting-down", sc.PreviousState.Name, sc.CurrentState.Name)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if code(err) == "InvalidInstanceID.NotFound" {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminated instance %s still visible after 10s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if info, _ := sim.Instance(id); info.State != ec2sim.Terminated {
		t.Errorf("state = %s, want terminated", info.State)
	}
}

// TestShutdownBehaviourStop: an instance launched without terminate on
// shutdown only stops when its user data powers it off, as on EC2 (and
// keeps its volume billed), which is why ec2host always sets terminate.
func TestShutdownBehaviourStop(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	ud := base64.StdEncoding.EncodeToString([]byte("systemd-run --on-active=1s /bin/systemctl poweroff --force\n"))
	out, err := c.RunInstances(context.Background(), &ec2.RunInstancesInput{
		ImageId: aws.String(image), InstanceType: "t3.micro", MinCount: aws.Int32(1), MaxCount: aws.Int32(1), UserData: aws.String(ud)})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.Instances[0].InstanceId)
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, _ := sim.Instance(id)
		if info.State == ec2sim.Stopped {
			// A stopped machine is off: its test host is gone.
			if _, err := os.Stat(filepath.Join("/run/netns", info.Namespace)); !os.IsNotExist(err) {
				t.Errorf("namespace %s of stopped instance %s still exists", info.Namespace, id)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s is %s 10s after its power-off, want stopped", id, info.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RunInstances records the metadata options and the root volume's
// encryption, DescribeInstances reports the options as EC2 does, and
// values EC2 refuses are refused.
func TestInstanceMetadataOptionsAndEncryption(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	ctx := context.Background()
	imgs, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{image}})
	if err != nil || len(imgs.Images) != 1 {
		t.Fatalf("DescribeImages(%s) = %v, %v", image, imgs, err)
	}
	root := aws.ToString(imgs.Images[0].RootDeviceName)
	run := func(tokens types.HttpTokensState, hops int32, ebs *types.EbsBlockDevice) (*ec2.RunInstancesOutput, error) {
		return c.RunInstances(ctx, &ec2.RunInstancesInput{
			ImageId: aws.String(image), InstanceType: "m6i.metal", MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			MetadataOptions:     &types.InstanceMetadataOptionsRequest{HttpTokens: tokens, HttpPutResponseHopLimit: aws.Int32(hops)},
			BlockDeviceMappings: []types.BlockDeviceMapping{{DeviceName: aws.String(root), Ebs: ebs}},
		})
	}
	out, err := run(types.HttpTokensStateRequired, 1, &types.EbsBlockDevice{Encrypted: aws.Bool(true), KmsKeyId: aws.String("alias/bench")})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.Instances[0].InstanceId)
	info, _ := sim.Instance(id)
	if got, want := info.Metadata, (ec2sim.MetadataOptions{HTTPTokens: "required", HopLimit: 1}); got != want {
		t.Errorf("metadata options = %+v, want %+v", got, want)
	}
	if len(info.Volumes) != 1 || !info.Volumes[0].Encrypted || info.Volumes[0].KMSKeyID != "alias/bench" {
		t.Errorf("volumes = %+v, want one root volume encrypted with alias/bench", info.Volumes)
	}
	d, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	mo := d.Reservations[0].Instances[0].MetadataOptions
	if mo == nil || mo.HttpTokens != types.HttpTokensStateRequired || aws.ToInt32(mo.HttpPutResponseHopLimit) != 1 {
		t.Errorf("described metadata options = %+v, want required with hop limit 1", mo)
	}
	// Without options an instance answers IMDSv1 too and its volume is
	// not encrypted, as on an account without default encryption.
	plain, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(image), InstanceType: "m6i.metal",
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := sim.Instance(aws.ToString(plain.Instances[0].InstanceId)); info.Metadata.HTTPTokens != "optional" || info.Volumes[0].Encrypted {
		t.Errorf("default instance: metadata %+v, volumes %+v; want optional tokens, unencrypted", info.Metadata, info.Volumes)
	}
	for _, tc := range []struct {
		tokens types.HttpTokensState
		hops   int32
		ebs    *types.EbsBlockDevice
		code   string
	}{
		{"sometimes", 1, &types.EbsBlockDevice{}, "InvalidParameterValue"},
		{types.HttpTokensStateRequired, 65, &types.EbsBlockDevice{}, "InvalidParameterValue"},
		{types.HttpTokensStateRequired, 1, &types.EbsBlockDevice{KmsKeyId: aws.String("alias/bench")}, "InvalidParameterDependency"},
	} {
		if _, err := run(tc.tokens, tc.hops, tc.ebs); err == nil || !strings.Contains(err.Error(), tc.code) {
			t.Errorf("RunInstances(tokens %s, hops %d, %+v) = %v, want %s", tc.tokens, tc.hops, tc.ebs, err, tc.code)
		}
	}
}
