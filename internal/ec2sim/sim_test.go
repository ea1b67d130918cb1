package ec2sim_test

import (
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

const image = "ami-0a9b8c7d6e5f40312"

// client is a plain SDK client (no ec2host) pointed at sim, retries off so
// each call is one request.
func client(t *testing.T, sim *ec2sim.Server) *ec2.Client {
	t.Helper()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	return ec2.New(ec2.Options{
		Region:       sim.Region(),
		BaseEndpoint: aws.String(sim.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIMTEST", "sim-secret", ""),
		Retryer:      retry.AddWithMaxAttempts(retry.NewStandard(), 1),
	})
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestErrorDocument(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	// An unsigned request, as a client without credentials sends it.
	resp, err := http.PostForm(sim.URL, url.Values{"Action": {"DescribeInstances"}, "Version": {"2016-11-15"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := resp.StatusCode, 401; got != want {
		t.Errorf("status = %d, want %d", got, want)
	}
	var doc struct {
		XMLName   xml.Name `xml:"Response"`
		Code      string   `xml:"Errors>Error>Code"`
		Message   string   `xml:"Errors>Error>Message"`
		RequestID string   `xml:"RequestID"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("error body is not EC2's error XML: %v\n%s", err, body)
	}
	if doc.Code != "AuthFailure" || doc.Message == "" || doc.RequestID == "" {
		t.Errorf("error doc = %+v, want AuthFailure with a message and a RequestID", doc)
	}

	c := client(t, sim)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"unknown id", func() error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			return err
		}, "InvalidInstanceID.NotFound"},
		{"malformed id", func() error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"x-1"}})
			return err
		}, "InvalidInstanceID.Malformed"},
		{"unknown filter", func() error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{{Name: aws.String("instance-state"), Values: []string{"running"}}}})
			return err
		}, "InvalidParameterValue"},
		{"unknown type", func() error {
			_, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"q9.huge"}})
			return err
		}, "InvalidInstanceType"},
		{"unknown image", func() error {
			_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-0000000000000dead"), InstanceType: "t3.micro", MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
			return err
		}, "InvalidAMIID.NotFound"},
		{"unknown key", func() error {
			_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(image), InstanceType: "t3.micro", KeyName: aws.String("nope"), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
			return err
		}, "InvalidKeyPair.NotFound"},
		{"terminate unknown", func() error {
			_, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			return err
		}, "InvalidInstanceID.NotFound"},
	} {
		err := tc.call()
		if got := code(err); got != tc.want {
			t.Errorf("%s: error code = %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestCatalogue(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	ctx := context.Background()
	it, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"r8i.metal-96xl"}})
	if err != nil {
		t.Fatal(err)
	}
	got := it.InstanceTypes[0]
	if aws.ToInt32(got.VCpuInfo.DefaultVCpus) != 384 || aws.ToInt64(got.MemoryInfo.SizeInMiB) != 3072*1024 || !aws.ToBool(got.BareMetal) {
		t.Errorf("r8i.metal-96xl = %d vCPUs, %d MiB, metal %v; want 384, %d, true",
			aws.ToInt32(got.VCpuInfo.DefaultVCpus), aws.ToInt64(got.MemoryInfo.SizeInMiB), aws.ToBool(got.BareMetal), 3072*1024)
	}
	imgs, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"136693071363"},
		Filters: []types.Filter{{Name: aws.String("name"), Values: []string{"debian-12-amd64-2024*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(imgs.Images), 2; got != want {
		t.Fatalf("%d images, want %d", got, want)
	}
	if im := imgs.Images[1]; aws.ToString(im.ImageId) != image || aws.ToString(im.OwnerId) != "136693071363" ||
		aws.ToString(im.CreationDate) == "" || im.State != types.ImageStateAvailable {
		t.Errorf("image = %+v, want %s with owner, creation date, available", im, image)
	}
	imgs, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil || len(imgs.Images) != 0 {
		t.Errorf("images of another owner = %d, %v; want none", len(imgs.Images), err)
	}
}

// TestInstanceWireFormat checks that every field the SDK reads arrives,
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
