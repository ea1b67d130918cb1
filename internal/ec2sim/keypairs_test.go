package ec2sim_test

import (
	"context"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"golang.org/x/crypto/ssh"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

func TestKeyPairs(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	ctx := context.Background()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	line := ssh.MarshalAuthorizedKey(sp)
	imp, err := c.ImportKeyPair(ctx, &ec2.ImportKeyPairInput{KeyName: aws.String("k1"), PublicKeyMaterial: line})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := aws.ToString(imp.KeyFingerprint), ssh.FingerprintSHA256(sp); got != want {
		t.Errorf("fingerprint = %s, want %s", got, want)
	}
	if id := aws.ToString(imp.KeyPairId); !strings.HasPrefix(id, "key-") || len(id) != len("key-")+17 {
		t.Errorf("key pair id = %q, want key- and 17 hex digits", id)
	}
	if _, err := c.ImportKeyPair(ctx, &ec2.ImportKeyPairInput{KeyName: aws.String("k1"), PublicKeyMaterial: line}); code(err) != "InvalidKeyPair.Duplicate" {
		t.Errorf("second import error = %v, want InvalidKeyPair.Duplicate", err)
	}
	if _, err := c.ImportKeyPair(ctx, &ec2.ImportKeyPairInput{KeyName: aws.String("k2"), PublicKeyMaterial: []byte("not a key")}); code(err) != "InvalidKey.Format" {
		t.Errorf("import of garbage error = %v, want InvalidKey.Format", err)
	}
	if got := sim.KeyPairs(); len(got) != 1 || got[0] != "k1" {
		t.Errorf("key pairs = %v, want [k1]", got)
	}
	del, err := c.DeleteKeyPair(ctx, &ec2.DeleteKeyPairInput{KeyName: aws.String("k1")})
	if err != nil {
		t.Fatal(err)
	}
	if !aws.ToBool(del.Return) || aws.ToString(del.KeyPairId) != aws.ToString(imp.KeyPairId) {
		t.Errorf("DeleteKeyPair = return %v, id %s; want true, %s", aws.ToBool(del.Return), aws.ToString(del.KeyPairId), aws.ToString(imp.KeyPairId))
	}
	// EC2 answers true for a key pair that does not exist.
	if del, err := c.DeleteKeyPair(ctx, &ec2.DeleteKeyPairInput{KeyName: aws.String("k1")}); err != nil || !aws.ToBool(del.Return) {
		t.Errorf("second DeleteKeyPair = %v, %v; want true", del, err)
	}
	if got := sim.KeyPairs(); len(got) != 0 {
		t.Errorf("key pairs after delete = %v, want none", got)
	}
}
