package ec2host_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

const testRole = "arn:aws:iam::123456789012:role/bench"

// unsetenv removes k for the test and puts it back after.
func unsetenv(t *testing.T, k string) {
	t.Helper()
	t.Setenv(k, "")
	os.Unsetenv(k)
}

// bareEnv leaves the SDK's default chain nothing to find but what a test
// puts there: no keys, profile, region or files in the environment.
func bareEnv(t *testing.T) {
	t.Helper()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
		unsetenv(t, k)
	}
}

// findImage makes one EC2 call and returns the keys that signed the
// DescribeImages calls so far.
func findImage(t *testing.T, sim *ec2sim.Server, c *ec2host.Client) []string {
	t.Helper()
	if _, err := c.FindImage(ctxFor(t, 30*time.Second), imageName, []string{debianOwn}); err != nil {
		t.Fatalf("FindImage: %v", err)
	}
	return sim.AccessKeys("DescribeImages")
}

// TestSharedFilesProfile: a profile from given shared files supplies the
// region and the keys, and wins over keys in the environment.
func TestSharedFilesProfile(t *testing.T) {
	bareEnv(t)
	sim := ec2sim.New(t, ec2sim.Options{})
	dir := t.TempDir()
	creds, conf := filepath.Join(dir, "credentials"), filepath.Join(dir, "config")
	os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIDDEFAULTFILE\naws_secret_access_key = d\n\n"+
		"[bench]\naws_access_key_id = AKIDPROFILEBENCH\naws_secret_access_key = p\n"), 0o600)
	os.WriteFile(conf, []byte("[profile bench]\nregion = "+sim.Region()+"\n"), 0o600)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "e")

	c, err := ec2host.New(context.Background(), ec2host.Config{Endpoint: sim.URL, Profile: "bench",
		SharedConfigFiles: []string{conf}, SharedCredentialsFiles: []string{creds}, MaxAttempts: 1})
	if err != nil {
		t.Fatalf("ec2host.New: %v", err)
	}
	if got, want := c.Region(), sim.Region(); got != want {
		t.Errorf("region = %q, want the profile's %q", got, want)
	}
	if got, want := findImage(t, sim, c), []string{"AKIDPROFILEBENCH"}; !slices.Equal(got, want) {
		t.Errorf("DescribeImages signed by %v, want the profile's key %v", got, want)
	}
}

// TestEnvironmentCredentials: with no profile and no static keys the
// environment's keys sign the calls, shared files given or not.
func TestEnvironmentCredentials(t *testing.T) {
	bareEnv(t)
	sim := ec2sim.New(t, ec2sim.Options{})
	creds := filepath.Join(t.TempDir(), "credentials")
	os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIDDEFAULTFILE\naws_secret_access_key = d\n"), 0o600)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "e")
	t.Setenv("AWS_REGION", sim.Region())
	c, err := ec2host.New(context.Background(), ec2host.Config{Endpoint: sim.URL, SharedCredentialsFiles: []string{creds}, MaxAttempts: 1})
	if err != nil {
		t.Fatalf("ec2host.New: %v", err)
	}
	if got, want := findImage(t, sim, c), []string{"AKIDFROMENV"}; !slices.Equal(got, want) {
		t.Errorf("DescribeImages signed by %v, want the environment's key %v", got, want)
	}
}

// TestAssumeRole: EC2 calls are signed with the role's temporary key,
// obtained once with the base key, and the caller identity is the role
// session, which names the owner when no user is known.
func TestAssumeRole(t *testing.T) {
	bareEnv(t)
	unsetenv(t, "USER")
	unsetenv(t, "LOGNAME")
	sim := ec2sim.New(t, ec2sim.Options{})
	c, err := ec2host.New(context.Background(), ec2host.Config{Region: sim.Region(), Endpoint: sim.URL, STSEndpoint: sim.URL,
		AccessKeyID: "AKIDBASEKEY", SecretAccessKey: "b", MaxAttempts: 1,
		AssumeRole: &ec2host.AssumeRole{RoleARN: testRole, SessionName: "run-7", ExternalID: "ext-1", Duration: 20 * time.Minute}})
	if err != nil {
		t.Fatalf("ec2host.New: %v", err)
	}
	want := ec2sim.AssumeRoleCall{RoleARN: testRole, RoleSessionName: "run-7", ExternalID: "ext-1", DurationSeconds: 1200, AccessKeyID: "AKIDBASEKEY"}
	if got := sim.AssumeRoleCalls(); len(got) != 1 || got[0] != want {
		t.Fatalf("AssumeRole calls = %+v, want [%+v]", got, want)
	}
	keys := findImage(t, sim, c)
	if len(keys) != 1 || !strings.HasPrefix(keys[0], "ASIA") {
		t.Errorf("DescribeImages signed by %v, want one temporary ASIA key", keys)
	}
	arn, err := c.CallerIdentity(ctxFor(t, 30*time.Second))
	if got, want := arn, "arn:aws:sts::123456789012:assumed-role/bench/run-7"; err != nil || got != want {
		t.Errorf("CallerIdentity = %q, %v; want %q", got, err, want)
	}
	if got := sim.AccessKeys("GetCallerIdentity"); !slices.Equal(got, keys) {
		t.Errorf("GetCallerIdentity signed by %v, want the role's key %v", got, keys)
	}
	if owner, err := c.Owner(ctxFor(t, 30*time.Second), ""); owner != "run-7" || err != nil {
		t.Errorf("Owner = %q, %v; want the session name run-7", owner, err)
	}
}

// TestAssumeRoleRefused: a role the caller may not assume fails the
// client, naming the role and STS's reason.
func TestAssumeRoleRefused(t *testing.T) {
	bareEnv(t)
	sim := ec2sim.New(t, ec2sim.Options{})
	sim.RefuseRole(testRole)
	_, err := ec2host.New(context.Background(), ec2host.Config{Region: sim.Region(), Endpoint: sim.URL, STSEndpoint: sim.URL,
		AccessKeyID: "AKIDBASEKEY", SecretAccessKey: "b", MaxAttempts: 1, AssumeRole: &ec2host.AssumeRole{RoleARN: testRole}})
	if err == nil || !strings.Contains(err.Error(), "assume role "+testRole) || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("ec2host.New = %v, want an AccessDenied error naming %s", err, testRole)
	}
	if got := sim.AssumeRoleCalls(); len(got) != 1 || got[0].RoleSessionName != ec2host.DefaultSessionName {
		t.Errorf("AssumeRole calls = %+v, want one with session name %q", got, ec2host.DefaultSessionName)
	}
	if n := sim.Calls("DescribeImages") + sim.Calls("RunInstances"); n != 0 {
		t.Errorf("EC2 calls after the refusal = %d, want 0", n)
	}
}

// TestOwnerOrder: explicit, USER, LOGNAME, the caller identity, the host
// name; never empty.
func TestOwnerOrder(t *testing.T) {
	bareEnv(t)
	sim := ec2sim.New(t, ec2sim.Options{})
	sim.AddUser("AKIDALICE", "alice")
	c, err := ec2host.New(context.Background(), ec2host.Config{Region: sim.Region(), Endpoint: sim.URL, STSEndpoint: sim.URL,
		AccessKeyID: "AKIDALICE", SecretAccessKey: "a", MaxAttempts: 1})
	if err != nil {
		t.Fatalf("ec2host.New: %v", err)
	}
	host, _ := os.Hostname()
	for _, tc := range []struct {
		name, explicit, user, logname string
		stsDown                       bool
		want                          string
	}{
		{"explicit", "ci", "bob", "carol", false, "ci"},
		{"USER", "", "bob", "carol", false, "bob"},
		{"LOGNAME", "", "", "carol", false, "carol"},
		{"caller identity", "", "", "", false, "alice"},
		{"host name", "", "", "", true, host},
	} {
		for k, v := range map[string]string{"USER": tc.user, "LOGNAME": tc.logname} {
			if v == "" {
				unsetenv(t, k)
			} else {
				t.Setenv(k, v)
			}
		}
		sim.DisableSTS(tc.stsDown)
		got, err := c.Owner(ctxFor(t, 30*time.Second), tc.explicit)
		if got != tc.want || got == "" {
			t.Errorf("%s: Owner = %q, want %q", tc.name, got, tc.want)
		}
		if tc.stsDown != (err != nil) {
			t.Errorf("%s: Owner error = %v, want one only when STS fails", tc.name, err)
		}
	}
}

func TestARNOwner(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:iam::123456789012:user/alice":                "alice",
		"arn:aws:iam::123456789012:user/team/bob":             "bob",
		"arn:aws:sts::123456789012:assumed-role/ci/run-42":    "run-42",
		"arn:aws-us-gov:sts::123456789012:assumed-role/r/s@x": "s@x",
		"arn:aws:iam::123456789012:root":                      "arn:aws:iam::123456789012:root",
	} {
		if got := ec2host.ARNOwner(arn); got != want {
			t.Errorf("ARNOwner(%q) = %q, want %q", arn, got, want)
		}
	}
}
