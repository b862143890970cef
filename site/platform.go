package site

import (
	"net/http"
	"strings"
)

// Client hints the page reads to put the visitor's build first. Browsers
// that support them send Sec-CH-UA-Platform by themselves; the architecture
// only after the server asked for it (Accept-CH), so the first visit goes
// by the User-Agent alone.
const (
	hintPlatform = "Sec-CH-UA-Platform"
	hintArch     = "Sec-CH-UA-Arch"
	hintMobile   = "Sec-CH-UA-Mobile"
)

// visitorBuild guesses the build (x86, arm, mac) of the visitor's system
// from the request's client hints and User-Agent, "" when it is none of
// them (Windows, a phone, a crawler). The hints win where both are sent:
// Chrome's User-Agent says "Linux x86_64" on every Linux.
func visitorBuild(r *http.Request) string {
	ua := r.UserAgent()
	platform := strings.ToLower(strings.Trim(r.Header.Get(hintPlatform), `" `))
	arch := strings.ToLower(strings.Trim(r.Header.Get(hintArch), `" `))
	switch platform {
	case "macos":
		return "mac"
	case "linux":
		return linuxBuild(arch, ua)
	case "":
	default:
		// Windows, Android, Chrome OS, iOS: no build of ours runs there.
		return ""
	}
	switch {
	case isMac(ua):
		return "mac"
	case strings.Contains(ua, "Linux") && !strings.Contains(ua, "Android"):
		return linuxBuild(arch, ua)
	}
	return ""
}

// linuxBuild picks x86 or arm for a Linux visitor: the architecture hint
// when sent, else the User-Agent's (Firefox says "Linux aarch64").
func linuxBuild(arch, ua string) string {
	switch arch {
	case "arm":
		return "arm"
	case "x86":
		return "x86"
	}
	for _, a := range []string{"aarch64", "arm64", "armv8"} {
		if strings.Contains(ua, a) {
			return "arm"
		}
	}
	return "x86"
}

// isMac reports whether a User-Agent is a desktop Mac's.
func isMac(ua string) bool {
	return (strings.Contains(ua, "Macintosh") || strings.Contains(ua, "Mac OS X")) &&
		!strings.Contains(ua, "iPhone") && !strings.Contains(ua, "iPad")
}

// visitorPhone reports whether the visitor is on a phone or tablet, where
// none of the builds runs: the Sec-CH-UA-Mobile hint, a mobile platform
// hint, or a User-Agent of Android, iPhone or iPad.
func visitorPhone(r *http.Request) bool {
	if strings.TrimSpace(r.Header.Get(hintMobile)) == "?1" {
		return true
	}
	switch strings.ToLower(strings.Trim(r.Header.Get(hintPlatform), `" `)) {
	case "android", "ios":
		return true
	}
	ua := r.UserAgent()
	for _, s := range []string{"Android", "iPhone", "iPad", "iPod"} {
		if strings.Contains(ua, s) {
			return true
		}
	}
	return false
}
