package ec2sim_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

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
	imgs, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []types.Filter{{Name: aws.String("name"), Values: []string{"debian-*"}}}})
	if err != nil || len(imgs.Images) != 0 {
		t.Errorf("Debian images owned by amazon = %d, %v; want none", len(imgs.Images), err)
	}
	// "amazon" is an owner alias: it finds Amazon Linux, owned by 137112412989.
	imgs, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []types.Filter{{Name: aws.String("name"), Values: []string{"al2023-ami-2023.*-x86_64"}}}})
	if err != nil || len(imgs.Images) != 1 || aws.ToString(imgs.Images[0].OwnerId) != "137112412989" ||
		aws.ToString(imgs.Images[0].ImageOwnerAlias) != "amazon" {
		t.Errorf("Amazon Linux by owner alias = %+v, %v; want one image of 137112412989", imgs.Images, err)
	}
}

// TestInstanceWireFormat checks that every field the SDK reads arrives,
