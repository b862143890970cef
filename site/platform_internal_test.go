package site

import (
	"net/http/httptest"
	"testing"
)

func TestVisitorBuild(t *testing.T) {
	const (
		chromeLinux   = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
		chromeMac     = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
		safari        = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"
		firefoxArm    = "Mozilla/5.0 (X11; Linux aarch64; rv:140.0) Gecko/20100101 Firefox/140.0"
		chromeWindows = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
		android       = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36"
		iPad          = "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1"
		curl          = "curl/8.14.1"
	)
	tests := []struct {
		name, ua, platform, arch string
		want                     string
	}{
		{"ChromeLinux", chromeLinux, "", "", "x86"},
		{"ChromeLinuxHint", chromeLinux, `"Linux"`, "", "x86"},
		{"ChromeLinuxArmHint", chromeLinux, `"Linux"`, `"arm"`, "arm"},
		{"ChromeLinuxX86Hint", firefoxArm, `"Linux"`, `"x86"`, "x86"},
		{"FirefoxLinuxArm", firefoxArm, "", "", "arm"},
		{"ChromeMac", chromeMac, "", "", "mac"},
		{"ChromeMacHint", chromeMac, `"macOS"`, `"arm"`, "mac"},
		{"Safari", safari, "", "", "mac"},
		{"HintWinsOverUA", chromeLinux, `"macOS"`, "", "mac"},
		{"Windows", chromeWindows, "", "", ""},
		{"WindowsHint", chromeLinux, `"Windows"`, "", ""},
		{"Android", android, "", "", ""},
		{"AndroidHint", android, `"Android"`, "", ""},
		{"IPad", iPad, "", "", ""},
		{"Curl", curl, "", "", ""},
		{"Empty", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("User-Agent", tt.ua)
			if tt.platform != "" {
				r.Header.Set(hintPlatform, tt.platform)
			}
			if tt.arch != "" {
				r.Header.Set(hintArch, tt.arch)
			}
			if got := visitorBuild(r); got != tt.want {
				t.Errorf("visitorBuild = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVisitorPhone(t *testing.T) {
	const (
		chromeLinux = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
		android     = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36"
		iPhone      = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1"
		safari      = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"
	)
	tests := []struct {
		name, ua, platform, mobile string
		want                       bool
	}{
		{"Android", android, "", "", true},
		{"IPhone", iPhone, "", "", true},
		{"MobileHint", chromeLinux, "", "?1", true},
		{"AndroidPlatformHint", chromeLinux, `"Android"`, "", true},
		{"DesktopLinux", chromeLinux, `"Linux"`, "?0", false},
		{"DesktopSafari", safari, "", "", false},
		{"Empty", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("User-Agent", tt.ua)
			if tt.platform != "" {
				r.Header.Set(hintPlatform, tt.platform)
			}
			if tt.mobile != "" {
				r.Header.Set(hintMobile, tt.mobile)
			}
			if got := visitorPhone(r); got != tt.want {
				t.Errorf("visitorPhone = %v, want %v", got, tt.want)
			}
		})
	}
}
