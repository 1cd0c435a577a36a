#!/usr/bin/env bash
# Regenerates the committed sample files in Fixtures/files/ and Fixtures/hostile/ with Debian tools.
#
# Usage: Fixtures/generate.sh
#
# Every output is small and comes out byte-for-byte the same on every run with the same Debian
# package versions: no timestamps, host names or random seeds end up in the files. Missing tools
# are installed with apt-get when run as root; otherwise the script names the packages and stops.
# At the end it prints one line per output: `file --mime-type` of it, its size and its name.
# Very large and sparse files are not made here: tests create them at run time.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
files="$here/files"
hostile="$here/hostile"

export LC_ALL=C.UTF-8 TZ=UTC SOURCE_DATE_EPOCH=1700000000
umask 022

# ImageMagick's own binary; a stand-in named `convert` elsewhere on PATH would not do.
convert=/usr/bin/convert

# command that must exist -> Debian package that ships it
declare -A needed=(
    ["$convert"]=imagemagick
    [heif-enc]=libheif-examples
    [cwebp]=webp
    [sox]=sox
    [lame]=lame
    [ffmpeg]=ffmpeg
    [gs]=ghostscript
    [zip]=zip
    [file]=file
)

install_missing() {
    local missing=() tool
    for tool in "${!needed[@]}"; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("${needed[$tool]}")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "generate.sh: missing Debian packages: ${missing[*]} (apt-get install them as root)" >&2
        exit 1
    fi
    echo "generate.sh: installing ${missing[*]}" >&2
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
}

install_missing

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
out="$work/files"
bad="$work/hostile"
mkdir -p "$out" "$bad"

# ImageMagick: no date/time properties, no profiles or comments in any output.
im() {
    "$convert" "$@"
}
im_clean=(-strip +set date:create +set date:modify +set date:timestamp)

# --- Images -------------------------------------------------------------------------------------

# A small photo-like picture (seeded plasma, softened) as a baseline JPEG.
im -size 96x64 -seed 7 plasma:skyblue-forestgreen -blur 0x1 "${im_clean[@]}" "$work/photo-source.png"
im "$work/photo-source.png" "${im_clean[@]}" -sampling-factor 2x2 -quality 80 "$out/photo.jpg"

# A screenshot-like PNG: flat colours, a bar and a box, no text (fonts vary between machines).
im -size 80x60 xc:white -fill '#3478f6' -draw 'rectangle 0,0 79,11' \
    -fill '#e5e5ea' -draw 'rectangle 8,20 71,51' -fill '#34c759' -draw 'circle 40,36 40,44' \
    "${im_clean[@]}" -define png:exclude-chunks=date,time,tIME "PNG8:$out/image.png"

# A three-frame animated GIF that loops.
im -delay 20 -size 24x24 xc:'#ff3b30' xc:'#34c759' xc:'#007aff' -loop 0 "${im_clean[@]}" "$out/anim.gif"

# HEIC (HEVC still image in a HEIF container), encoded from the same picture as the photo.
heif-enc --quality 50 --output "$out/photo.heic" "$work/photo-source.png" >/dev/null

# Lossy WebP without metadata.
cwebp -quiet -q 60 -metadata none "$work/photo-source.png" -o "$out/image.webp"

# A grey "scanned page" as LZW-compressed TIFF.
im -size 64x80 xc:'#f4f1ea' -fill '#222222' -draw 'rectangle 8,10 55,13' -draw 'rectangle 8,20 50,23' \
    -draw 'rectangle 8,30 52,33' -colorspace Gray -depth 8 "${im_clean[@]}" -define tiff:exif-properties=false \
    -compress lzw "$out/scan.tiff"

# --- Documents ----------------------------------------------------------------------------------

# A one-page PDF from a PostScript program; fixed dates, no XMP packet or document id (both random).
cat >"$work/document.ps" <<'EOF'
%!PS-Adobe-3.0
%%BoundingBox: 0 0 298 210
<< /PageSize [298 210] >> setpagedevice
[ /Title (sharepipe fixture) /Author (sharepipe) /Creator (sharepipe Fixtures/generate.sh)
  /CreationDate (D:20231114221320Z) /ModDate (D:20231114221320Z) /DOCINFO pdfmark
/Helvetica findfont 14 scalefont setfont
20 170 moveto (sharepipe fixture document) show
/Helvetica findfont 10 scalefont setfont
20 145 moveto (A one-page PDF, as a files app would share it.) show
0.2 0.47 0.96 setrgbcolor 20 40 258 80 rectfill
showpage
EOF
gs -q -dSAFER -dBATCH -dNOPAUSE -sDEVICE=pdfwrite -dCompatibilityLevel=1.4 -dOmitXMP -dOmitID \
    -sOutputFile="$out/document.pdf" "$work/document.ps"

# UTF-8 text with non-ASCII letters.
cat >"$out/notes.txt" <<'EOF'
Shopping list — sharepipe fixture
• café au lait
• Bücher für die Reise
• 寿司 and お茶
• Ελληνικά, русский, עברית
EOF

# The same text as UTF-16 little endian with a byte order mark.
{ printf '\xff\xfe'; iconv -f UTF-8 -t UTF-16LE "$out/notes.txt"; } >"$out/notes-utf16.txt"

cat >"$out/page.html" <<'EOF'
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>sharepipe fixture page</title>
</head>
<body>
<h1>Shared from a browser</h1>
<p>A small page with a <a href="https://example.org/article">link</a> and an image.</p>
<img src="photo.jpg" alt="photo">
</body>
</html>
EOF

cat >"$out/data.json" <<'EOF'
{
  "name": "sharepipe fixture",
  "items": [
    { "id": 1, "title": "café", "tags": ["drink", "hot"] },
    { "id": 2, "title": "寿司", "tags": ["food"] }
  ],
  "count": 2,
  "shared": true
}
EOF

cat >"$out/table.csv" <<'EOF'
id,name,city,amount
1,Anna,Berlin,12.50
2,Bruno,Lyon,7.25
3,Chen,Shanghai,30.00
4,Dana,Austin,4.75
EOF

# vCard 3.0 with CRLF line ends, as the format requires.
printf '%s\r\n' \
    'BEGIN:VCARD' \
    'VERSION:3.0' \
    'N:Appleseed;Jane;;;' \
    'FN:Jane Appleseed' \
    'ORG:Example Ltd.' \
    'TEL;TYPE=CELL:+1-555-0100' \
    'EMAIL;TYPE=INTERNET:jane@example.org' \
    'END:VCARD' >"$out/contact.vcf"

# --- Archives -----------------------------------------------------------------------------------

# ZIP of two fixtures with a fixed modification time and no extra attributes.
mkdir "$work/zip"
cp "$out/notes.txt" "$out/data.json" "$work/zip/"
touch -d "@$SOURCE_DATE_EPOCH" "$work/zip/notes.txt" "$work/zip/data.json"
(cd "$work/zip" && zip -q -X -D -9 "$out/bundle.zip" notes.txt data.json)

# gzip without the original name and time stamp.
gzip -n -9 -c "$out/notes.txt" >"$out/notes.txt.gz"

# --- Audio and video ----------------------------------------------------------------------------

# Half a second of a 440 Hz tone, mono 16-bit 8 kHz WAV; -R and -D keep sox repeatable and undithered.
sox -R -D -n -r 8000 -c 1 -b 16 "$out/tone.wav" synth 0.5 sine 440 vol 0.5

# The same tone as a 16 kHz mono MP3 without ID3 tags.
sox -R -D -n -r 16000 -c 1 -b 16 "$work/tone16k.wav" synth 0.5 sine 440 vol 0.5
lame --quiet -b 32 -m m --noreplaygain "$work/tone16k.wav" "$out/tone.mp3"

# One second of H.264 test pattern with an AAC tone in MP4; bitexact drops encoder versions.
ffmpeg -nostdin -hide_banner -loglevel error -y \
    -f lavfi -i testsrc=size=64x48:rate=10:duration=1 \
    -f lavfi -i sine=frequency=440:sample_rate=16000:duration=1 \
    -map 0:v -map 1:a -c:v libx264 -preset veryslow -crf 35 -pix_fmt yuv420p -threads 1 \
    -c:a aac -b:a 16k -ac 1 -map_metadata -1 -fflags +bitexact -flags:v +bitexact -flags:a +bitexact \
    -movflags +faststart "$out/clip.mp4"

# --- Hostile inputs -----------------------------------------------------------------------------

# Plain text that claims to be a JPEG.
printf 'This is plain text pretending to be a JPEG photo.\n' >"$bad/lying.jpg"

# The first 40% of the JPEG: a valid header, no end of image.
photo_size=$(stat -c %s "$out/photo.jpg")
head -c $((photo_size * 40 / 100)) "$out/photo.jpg" >"$bad/truncated.jpg"

: >"$bad/empty.txt"

# Awkward names around a good JPEG.
cp "$out/photo.jpg" "$bad/my photo.jpg"
cp "$out/photo.jpg" "$bad/фото-写真.jpg"
cp "$out/photo.jpg" "$bad/new"$'\n'"line.jpg"
cp "$out/photo.jpg" "$bad/invalid-"$'\xff\xfe'"-utf8.jpg"
# The longest name Linux allows: 255 bytes.
long_name="long-$(printf 'x%.0s' $(seq 1 246)).jpg"
cp "$out/photo.jpg" "$bad/$long_name"

# --- Install and report -------------------------------------------------------------------------

rm -rf "$files" "$hostile"
mkdir -p "$files" "$hostile"
cp -a "$out/." "$files/"
cp -a "$bad/." "$hostile/"

for f in "$files"/* "$hostile"/*; do
    printf '%-32s %7d  %q\n' "$(file -b --mime-type "$f")" "$(stat -c %s "$f")" "${f#"$here"/}"
done
