// libebur128 (Debian's libebur128-dev): EBU R128 loudness, loudness range and true peak.
#include <ebur128.h>
