package ec2sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

func TestSecurityGroups(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	ctx := context.Background()
	sg, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("ssh"), Description: aws.String("ssh in")})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(sg.GroupId)
	if !strings.HasPrefix(id, "sg-") {
		t.Errorf("group id = %q, want sg-...", id)
	}
	if _, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("ssh"), Description: aws.String("again")}); code(err) != "InvalidGroup.Duplicate" {
		t.Errorf("duplicate group error = %v, want InvalidGroup.Duplicate", err)
	}
	ingress := &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: []types.IpPermission{{
		IpProtocol: aws.String("tcp"), FromPort: aws.Int32(22), ToPort: aws.Int32(22),
		IpRanges: []types.IpRange{{CidrIp: aws.String("10.0.0.0/8")}, {CidrIp: aws.String("192.0.2.0/24")}}}}}
	if out, err := c.AuthorizeSecurityGroupIngress(ctx, ingress); err != nil || !aws.ToBool(out.Return) {
		t.Fatalf("AuthorizeSecurityGroupIngress = %v, %v; want true", out, err)
	}
	if got, want := strings.Join(sim.SecurityGroups()[id], ","), "tcp:22-22:10.0.0.0/8,tcp:22-22:192.0.2.0/24"; got != want {
		t.Errorf("rules = %s, want %s", got, want)
	}
	if _, err := c.AuthorizeSecurityGroupIngress(ctx, ingress); code(err) != "InvalidPermission.Duplicate" {
		t.Errorf("repeated rule error = %v, want InvalidPermission.Duplicate", err)
	}
	for name, call := range map[string]func() error{
		"authorize": func() error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String("sg-0nope"), IpPermissions: ingress.IpPermissions})
			return err
		},
		"delete": func() error {
			_, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String("sg-0nope")})
			return err
		},
		"launch": func() error {
			_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(image), InstanceType: "t3.micro",
				MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SecurityGroupIds: []string{"sg-0nope"}})
			return err
		},
	} {
		if err := call(); code(err) != "InvalidGroup.NotFound" {
			t.Errorf("%s with an unknown group: error = %v, want InvalidGroup.NotFound", name, err)
		}
	}

	run, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(image), InstanceType: "t3.micro",
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SecurityGroupIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	in := run.Instances[0]
	if len(in.SecurityGroups) != 1 || aws.ToString(in.SecurityGroups[0].GroupName) != "ssh" {
		t.Errorf("instance groups = %+v, want the ssh group", in.SecurityGroups)
	}
	if _, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)}); code(err) != "DependencyViolation" {
		t.Errorf("delete of a group in use: error = %v, want DependencyViolation", err)
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(in.InstanceId)}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		out, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)})
		if err == nil {
			if !aws.ToBool(out.Return) {
				t.Errorf("DeleteSecurityGroup return = false, want true")
			}
			break
		}
		if code(err) != "DependencyViolation" || time.Now().After(deadline) {
			t.Fatalf("delete after terminate: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := sim.SecurityGroups(); len(got) != 0 {
		t.Errorf("groups after delete = %v, want none", got)
	}
}
