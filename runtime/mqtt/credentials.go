package mqtt

import (
	"bufio"
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Environment variables holding MQTT credentials. There are deliberately no
// command-line flags for them: a command line is visible to every user.
const (
	EnvUsername = "SOLO_MQTT_USERNAME"
	EnvPassword = "SOLO_MQTT_PASSWORD"
)

// Credentials are a username and password for an MQTT connection. The zero
// value connects anonymously.
type Credentials struct {
	Username, Password string
}

// LoadCredentials reads credentials from file, a single line
// "username:password" that only its owner may read, or, when file is empty,
// from the environment variables EnvUsername and EnvPassword (read through
// getenv, normally os.Getenv). With neither it returns zero Credentials.
func LoadCredentials(file string, getenv func(string) string) (Credentials, error) {
	if file == "" {
		user, pass := getenv(EnvUsername), getenv(EnvPassword)
		if (user == "") != (pass == "") {
			return Credentials{}, fmt.Errorf("%w: set both %s and %s, or neither", ErrCredentials, EnvUsername, EnvPassword)
		}
		return Credentials{user, pass}, nil
	}
	info, err := os.Stat(file)
	if err != nil {
		return Credentials{}, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return Credentials{}, fmt.Errorf("%w: %s is readable by others (mode %v): chmod 600 it", ErrCredentials, file, info.Mode().Perm())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return Credentials{}, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	line := strings.TrimRight(string(data), "\r\n")
	user, pass, ok := strings.Cut(line, ":")
	if !ok || user == "" || pass == "" || strings.ContainsAny(line, "\r\n") {
		return Credentials{}, fmt.Errorf("%w: %s must hold one line username:password", ErrCredentials, file)
	}
	return Credentials{user, pass}, nil
}

// PasswordFile holds the users of a mosquitto password file (the format
// mosquitto_passwd 2.x writes: "user:$7$iterations$salt$hash", PBKDF2 with
// HMAC-SHA512), so one file serves the embedded broker and mosquitto alike.
type PasswordFile struct {
	users map[string]pbkdf2Hash
}

type pbkdf2Hash struct {
	iterations int
	salt, hash []byte
}

// maxIterations bounds the work one login attempt can cost.
const maxIterations = 10_000_000

// LoadPasswordFile reads a mosquitto password file.
func LoadPasswordFile(path string) (*PasswordFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	pf, err := ParsePasswordFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pf, nil
}

// ParsePasswordFile parses the contents of a mosquitto password file. Blank
// lines and lines starting with # are ignored.
func ParsePasswordFile(data []byte) (*PasswordFile, error) {
	pf := &PasswordFile{users: map[string]pbkdf2Hash{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		user, encoded, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("%w: line %d is not user:hash", ErrCredentials, n)
		}
		h, err := parsePBKDF2(encoded)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d (user %q): %w", ErrCredentials, n, user, err)
		}
		if _, dup := pf.users[user]; dup {
			return nil, fmt.Errorf("%w: line %d: user %q appears twice", ErrCredentials, n, user)
		}
		pf.users[user] = h
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	return pf, nil
}

func parsePBKDF2(encoded string) (pbkdf2Hash, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 5 || parts[0] != "" || parts[1] != "7" {
		return pbkdf2Hash{}, fmt.Errorf("not a $7$ (PBKDF2-SHA512) hash: create the file with mosquitto_passwd 2.x")
	}
	iterations, err := strconv.Atoi(parts[2])
	if err != nil || iterations < 1 || iterations > maxIterations {
		return pbkdf2Hash{}, fmt.Errorf("iteration count %q is not in 1..%d", parts[2], maxIterations)
	}
	salt, err := base64.StdEncoding.DecodeString(parts[3])
	if err != nil || len(salt) == 0 {
		return pbkdf2Hash{}, fmt.Errorf("bad salt")
	}
	hash, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(hash) == 0 || len(hash) > sha512.Size {
		return pbkdf2Hash{}, fmt.Errorf("bad hash")
	}
	return pbkdf2Hash{iterations, salt, hash}, nil
}

// Has reports whether the file lists user.
func (pf *PasswordFile) Has(user string) bool {
	_, ok := pf.users[user]
	return ok
}

// Len is the number of users.
func (pf *PasswordFile) Len() int { return len(pf.users) }

// Verify reports whether password is user's.
func (pf *PasswordFile) Verify(user string, password []byte) bool {
	h, ok := pf.users[user]
	if !ok {
		return false
	}
	got, err := pbkdf2.Key(sha512.New, string(password), h.salt, h.iterations, len(h.hash))
	return err == nil && subtle.ConstantTimeCompare(got, h.hash) == 1
}
