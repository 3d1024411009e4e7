# Convenience targets. The README's two commands do not need make.
FFMPEG_LIBS := libavformat libavcodec libswresample libavutil

.PHONY: test bench bench-build floor fault-device deb

test:
	scripts/setup-debian.sh --tests && swift test

# The Debian package, .build/deb/tonearm_VERSION_ARCH.deb, checked by lintian (scripts/make-deb.sh).
deb:
	scripts/setup-debian.sh --deb
	scripts/make-deb.sh

# Builds release, the C floor and the media, then runs the benchmark (docs/performance.md).
bench: bench-build
	scripts/make-bench-media.sh >/dev/null
	python3 scripts/make-bench-library.py 20000 .build/bench/library-20k
	python3 scripts/make-bench-library.py 100000 .build/bench/library-100k
	.build/release/tonearm-bench

bench-build: floor
	scripts/setup-debian.sh --bench
	swift build -c release --product tonearmd
	swift build -c release --product tonearm-bench

floor: .build/bench/floor .build/bench/control_floor

.build/bench/floor: bench/floor.c
	mkdir -p .build/bench
	cc -O2 -Wall -o $@ $< $$(pkg-config --cflags --libs $(FFMPEG_LIBS))

.build/bench/control_floor: bench/control_floor.c
	mkdir -p .build/bench
	cc -O2 -Wall -Wextra -o $@ $<

# The fault-injecting ALSA test device (Tests/FaultDevice). The integration tests run this target
# themselves; -DPIC makes SND_PCM_PLUGIN_SYMBOL export the plain symbol ALSA's loader looks up.
fault-device: .build/fault-device/libasound_module_pcm_tonearmfault.so

.build/fault-device/libasound_module_pcm_tonearmfault.so: Tests/FaultDevice/tonearm_fault_pcm.c
	mkdir -p .build/fault-device
	cc -shared -fPIC -DPIC -O2 -Wall -Wextra -Werror -o $@.tmp $< $$(pkg-config --cflags --libs alsa)
	mv $@.tmp $@
