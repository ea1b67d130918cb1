package ec2sim

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The server also answers STS (Query API version 2011-06-15) at the same
// URL, so tests can point the SDK's STS client at it: AssumeRole issues
// temporary credentials that EC2 calls may then be signed with, and
// GetCallerIdentity says whose credentials signed a request. Requests
// signed for the "sts" service (or unsigned ones of STS's version) are
// STS's; every other request is EC2's.

const (
	stsVersion = "2011-06-15"
	stsXmlns   = "https://sts.amazonaws.com/doc/2011-06-15/"
	// defaultUser is the IAM user owning an access key AddUser did not name.
	defaultUser = "ec2sim-user"
	// maxSessionDuration is an IAM role's default MaxSessionDuration.
	maxSessionDuration = time.Hour
)

// stsState is what STS knows; guarded by Server.mu.
type stsState struct {
	users    map[string]string  // access key id -> IAM user name
	sessions map[string]session // temporary access key id -> session
	refused  map[string]bool    // role ARNs AssumeRole denies
	disabled bool               // RegionDisabledException
	assumed  []AssumeRoleCall
}

// session is a set of temporary credentials AssumeRole issued.
type session struct {
	secret, token  string
	arn, assumedID string
	expires        time.Time
}

// AssumeRoleCall is one AssumeRole request STS received, with the access
// key id that signed it.
type AssumeRoleCall struct {
	RoleARN, RoleSessionName, ExternalID string
	DurationSeconds                      int // 0 when not given
	AccessKeyID                          string
}

// AddUser makes accessKeyID the key of the IAM user userName, as
// GetCallerIdentity reports it. Keys not added belong to "ec2sim-user".
func (s *Server) AddUser(accessKeyID, userName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sts.users == nil {
		s.sts.users = map[string]string{}
	}
	s.sts.users[accessKeyID] = userName
}

// RefuseRole makes AssumeRole of roleARN fail with AccessDenied, as STS
// does when the role's trust policy does not admit the caller.
func (s *Server) RefuseRole(roleARN string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sts.refused == nil {
		s.sts.refused = map[string]bool{}
	}
	s.sts.refused[roleARN] = true
}

// DisableSTS makes every STS call fail with RegionDisabledException, as
// STS answers in a region the account deactivated it in (on = false lifts it).
func (s *Server) DisableSTS(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sts.disabled = on
}

// AssumeRoleCalls returns the AssumeRole requests received, in order,
// refused ones included.
func (s *Server) AssumeRoleCalls() []AssumeRoleCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]AssumeRoleCall(nil), s.sts.assumed...)
}

// AccessKeys returns the access key id that signed each request of an
// action (EC2's or STS's), in order; "" for an unsigned one.
func (s *Server) AccessKeys(action string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.signers[action]...)
}

// sigV4Scope is the credential part of a SigV4 Authorization header:
// Credential=AKID/date/region/service/aws4_request.
type sigV4Scope struct {
	accessKeyID, region, service string
}

// parseAuthorization reads the credential scope of a SigV4 Authorization
// header; ok is false for an unsigned or otherwise signed request.
func parseAuthorization(h string) (sc sigV4Scope, ok bool) {
	rest, found := strings.CutPrefix(h, "AWS4-HMAC-SHA256 Credential=")
	if !found {
		return sc, false
	}
	cred, _, _ := strings.Cut(rest, ",")
	parts := strings.Split(cred, "/")
	if len(parts) != 5 || parts[0] == "" || parts[4] != "aws4_request" {
		return sc, false
	}
	return sigV4Scope{accessKeyID: parts[0], region: parts[2], service: parts[3]}, true
}

// isSTS reports whether a request is for STS: signed for it, or unsigned
// and of STS's API version.
func isSTS(sc sigV4Scope, signed bool, f url.Values) bool {
	if signed {
		return sc.service == "sts"
	}
	return f.Get("Version") == stsVersion
}

// badSessionToken checks the session token of a request signed with
// temporary credentials this server issued: the SDK must send the token
// with them, and real AWS refuses the key without it. Long-term keys pass.
func (s *Server) badSessionToken(accessKeyID, token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sts.sessions[accessKeyID]
	if !ok {
		return false
	}
	return token != sess.token
}

// stsActions are the STS calls this server answers.
var stsActions = map[string]func(s *Server, f url.Values, reqID, accessKeyID string) (any, *apiError){
	"AssumeRole":        (*Server).assumeRole,
	"GetCallerIdentity": (*Server).getCallerIdentity,
}

// serveSTS checks and answers an STS request.
func (s *Server) serveSTS(w http.ResponseWriter, r *http.Request, reqID string, sc sigV4Scope, signed bool) {
	action := r.Form.Get("Action")
	// STS also sends the request id as a header, where the SDK reads it.
	w.Header().Set("X-Amzn-Requestid", reqID)
	if !signed {
		s.writeSTSError(w, reqID, errf(403, "MissingAuthenticationToken", "Request is missing Authentication Token"))
		return
	}
	if sc.region != s.opts.Region || s.badSessionToken(sc.accessKeyID, r.Header.Get("X-Amz-Security-Token")) {
		s.writeSTSError(w, reqID, errf(403, "InvalidClientTokenId", "The security token included in the request is invalid."))
		return
	}
	if v := r.Form.Get("Version"); v != stsVersion {
		s.writeSTSError(w, reqID, errf(400, "InvalidAction", "Could not find operation %s for version %s", action, v))
		return
	}
	s.mu.Lock()
	disabled := s.sts.disabled
	s.mu.Unlock()
	if disabled {
		s.writeSTSError(w, reqID, errf(403, "RegionDisabledException",
			"STS is not activated in this region for account:%s. Your account administrator can activate STS in this region using the IAM Console.", s.opts.OwnerID))
		return
	}
	handle, ok := stsActions[action]
	if !ok {
		s.writeSTSError(w, reqID, errf(400, "InvalidAction", "Could not find operation %s for version %s", action, stsVersion))
		return
	}
	resp, err := handle(s, r.Form, reqID, sc.accessKeyID)
	if err != nil {
		s.writeSTSError(w, reqID, err)
		return
	}
	b, mErr := xml.Marshal(resp)
	if mErr != nil {
		s.writeSTSError(w, reqID, errf(500, "InternalFailure", "marshal %s response: %v", action, mErr))
		return
	}
	writeXML(w, http.StatusOK, b)
}

// writeSTSError sends STS's error document, which differs from EC2's:
// <ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/>.
func (s *Server) writeSTSError(w http.ResponseWriter, reqID string, e *apiError) {
	typ := "Sender"
	if e.status >= 500 {
		typ = "Receiver"
	}
	b, _ := xml.Marshal(stsErrorResponse{Xmlns: stsXmlns, Type: typ, Code: e.code, Message: e.message, RequestID: reqID})
	writeXML(w, e.status, b)
}

// callerARNLocked is the ARN of the identity owning accessKeyID.
func (s *Server) callerARNLocked(accessKeyID string) (arn, userID string) {
	if sess, ok := s.sts.sessions[accessKeyID]; ok {
		return sess.arn, sess.assumedID
	}
	user := defaultUser
	if u, ok := s.sts.users[accessKeyID]; ok {
		user = u
	}
	return fmt.Sprintf("arn:aws:iam::%s:user/%s", s.opts.OwnerID, user), "AIDA" + idSuffix(user)
}

// idSuffix is a stable 17-character unique-id tail for a name, in the
// alphabet IAM uses for AIDA/AROA ids.
func idSuffix(name string) string {
	var h uint64 = 14695981039346656037
	for _, c := range []byte(name) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	out := make([]byte, 17)
	for i := range out {
		out[i] = alphabet[h%32]
		h = h/32 ^ uint64(i)*2654435761
	}
	return string(out)
}

var (
	roleARNRe     = regexp.MustCompile(`^arn:aws[a-z-]*:iam::(\d{12}):role/((?:[\x21-\x7e]+/)*)([\w+=,.@-]+)$`)
	sessionNameRe = regexp.MustCompile(`^[\w+=,.@-]*$`)
)

// assumeRole is STS AssumeRole: validate as STS does, then issue ASIA
// credentials for the role session.
func (s *Server) assumeRole(f url.Values, reqID, accessKeyID string) (any, *apiError) {
	roleARN, name, extID := f.Get("RoleArn"), f.Get("RoleSessionName"), f.Get("ExternalId")
	dur := 0
	if v := f.Get("DurationSeconds"); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil {
			return nil, errf(400, "ValidationError", "Value '%s' at 'durationSeconds' failed to satisfy constraint: Member must be a number", v)
		}
		dur = d
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sts.assumed = append(s.sts.assumed, AssumeRoleCall{RoleARN: roleARN, RoleSessionName: name, ExternalID: extID, DurationSeconds: dur, AccessKeyID: accessKeyID})
	switch {
	case roleARN == "":
		return nil, errf(400, "ValidationError", "1 validation error detected: Value null at 'roleArn' failed to satisfy constraint: Member must not be null")
	case name == "":
		return nil, errf(400, "ValidationError", "1 validation error detected: Value null at 'roleSessionName' failed to satisfy constraint: Member must not be null")
	case len(name) < 2 || len(name) > 64 || !sessionNameRe.MatchString(name):
		return nil, errf(400, "ValidationError", "1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: "+
			"Member must satisfy regular expression pattern: [\\w+=,.@-]*", name)
	case dur != 0 && dur < 900:
		return nil, errf(400, "ValidationError", "1 validation error detected: Value '%d' at 'durationSeconds' failed to satisfy constraint: "+
			"Member must have value greater than or equal to 900", dur)
	case time.Duration(dur)*time.Second > maxSessionDuration:
		return nil, errf(400, "ValidationError", "The requested DurationSeconds exceeds the MaxSessionDuration set for this role.")
	}
	caller, _ := s.callerARNLocked(accessKeyID)
	m := roleARNRe.FindStringSubmatch(roleARN)
	if m == nil || m[1] != s.opts.OwnerID || s.sts.refused[roleARN] {
		return nil, errf(403, "AccessDenied", "User: %s is not authorized to perform: sts:AssumeRole on resource: %s", caller, roleARN)
	}
	if dur == 0 {
		dur = 3600
	}
	s.seq++
	akid := fmt.Sprintf("ASIA%016X", 0x5e0000000000+uint64(s.seq))
	sess := session{
		secret:    fmt.Sprintf("sim-session-secret-%d", s.seq),
		token:     fmt.Sprintf("FwoGZXIvYXdzE-sim-session-token-%d", s.seq),
		arn:       fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", m[1], m[3], name),
		assumedID: "AROA" + idSuffix(m[3]) + ":" + name,
		expires:   time.Now().Add(time.Duration(dur) * time.Second).UTC().Truncate(time.Second),
	}
	if s.sts.sessions == nil {
		s.sts.sessions = map[string]session{}
	}
	s.sts.sessions[akid] = sess
	out := assumeRoleResponse{Xmlns: stsXmlns, RequestID: reqID}
	out.Result.Credentials = xCredentials{AccessKeyID: akid, SecretAccessKey: sess.secret, SessionToken: sess.token,
		Expiration: sess.expires.Format(time.RFC3339)}
	out.Result.AssumedRoleUser = xAssumedRoleUser{Arn: sess.arn, AssumedRoleID: sess.assumedID}
	return out, nil
}

// getCallerIdentity is STS GetCallerIdentity, which needs no permission.
func (s *Server) getCallerIdentity(_ url.Values, reqID, accessKeyID string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	arn, userID := s.callerARNLocked(accessKeyID)
	out := getCallerIdentityResponse{Xmlns: stsXmlns, RequestID: reqID}
	out.Result.Arn, out.Result.UserID, out.Result.Account = arn, userID, s.opts.OwnerID
	return out, nil
}

// STS's documents, element names as STS writes them (and the SDK's
// deserializers read them).

type stsErrorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	Type      string   `xml:"Error>Type"`
	Code      string   `xml:"Error>Code"`
	Message   string   `xml:"Error>Message"`
	RequestID string   `xml:"RequestId"`
}

type xCredentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type xAssumedRoleUser struct {
	Arn           string `xml:"Arn"`
	AssumedRoleID string `xml:"AssumedRoleId"`
}

type assumeRoleResponse struct {
	XMLName xml.Name `xml:"AssumeRoleResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Result  struct {
		AssumedRoleUser xAssumedRoleUser `xml:"AssumedRoleUser"`
		Credentials     xCredentials     `xml:"Credentials"`
	} `xml:"AssumeRoleResult"`
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

type getCallerIdentityResponse struct {
	XMLName xml.Name `xml:"GetCallerIdentityResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Result  struct {
		Arn     string `xml:"Arn"`
		UserID  string `xml:"UserId"`
		Account string `xml:"Account"`
	} `xml:"GetCallerIdentityResult"`
	RequestID string `xml:"ResponseMetadata>RequestId"`
}
