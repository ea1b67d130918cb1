package ec2sim_test

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

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
