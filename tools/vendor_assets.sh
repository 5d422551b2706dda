#!/usr/bin/env bash
# Re-create book/_vendor: the JavaScript the HTML book needs to render math and widgets offline.
#
#   MathJax 3 (tex-chtml component, TeX extensions it autoloads, CHTML woff-v2 fonts)
#   RequireJS (AMD loader the widget embed script needs)
#   @jupyter-widgets/html-manager (embed-amd.js: renders the widget state saved in the page)
#
# Packages come from the npm registry with `npm pack` at the pinned versions below; only the files
# the pages load are kept, with each package's licence. _config.yml points html_static_path,
# mathjax_path and nb_ipywidgets_js at these files. Not under _static: Jupyter Book 1 adds every
# .js found there to every page.
#
# Without Node.js/npm (or without access to the registry) it prints one line and exits 0: the
# build goes on and the pages load MathJax and the widget scripts online (book/_ext/ncbook_cache.py
# switches _config.yml's offline paths back to the online defaults when book/_vendor is empty).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "vendor_assets.sh: npm not found; skipped (the pages will load MathJax and the widget scripts online)"
    exit 0
fi

MATHJAX=3.2.2
REQUIREJS=2.3.8
HTML_MANAGER=1.0.15
FONTAWESOME=5.15.4   # only for its licence: html-manager bundles Font Awesome 5 (^5.12) icon fonts

out=book/_vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! ( cd "$work" && npm pack --silent "mathjax@$MATHJAX" "requirejs@$REQUIREJS" "@jupyter-widgets/html-manager@$HTML_MANAGER" \
    "@fortawesome/fontawesome-free@$FONTAWESOME" >/dev/null 2>&1 ); then
    echo "vendor_assets.sh: npm pack failed (no registry access?); skipped (the pages will load MathJax and the widget scripts online)"
    exit 0
fi
for tgz in "$work"/*.tgz; do
    mkdir -p "${tgz%.tgz}" && tar xzf "$tgz" -C "${tgz%.tgz}"
done
mj="$work/mathjax-$MATHJAX/package"
rq="$work/requirejs-$REQUIREJS/package"
hm="$work/jupyter-widgets-html-manager-$HTML_MANAGER/package"
fa="$work/fortawesome-fontawesome-free-$FONTAWESOME/package"

# keep README.md (written by hand), replace everything else
find "$out" -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} + 2>/dev/null || true
mkdir -p "$out/mathjax/input/tex" "$out/mathjax/output/chtml/fonts" "$out/requirejs" "$out/html-manager"

# MathJax: the combined component, its autoloaded TeX extensions and the CHTML fonts.
cp "$mj/es5/tex-chtml.js" "$mj/LICENSE" "$out/mathjax/"
cp -r "$mj/es5/input/tex/extensions" "$out/mathjax/input/tex/"
rm "$out/mathjax/input/tex/extensions/all-packages.js"   # loaded only when asked for by name
cp -r "$mj/es5/output/chtml/fonts/woff-v2" "$out/mathjax/output/chtml/fonts/"

# RequireJS: the package ships one unminified file; its header carries the MIT notice.
cp "$rq/require.js" "$out/requirejs/"
sed -n '1,4p' "$rq/require.js" > "$out/requirejs/LICENSE-NOTICE.txt"

# html-manager: the AMD embed bundle (base, controls and output widgets included) and the icon
# fonts its CSS asks for (modern browsers take the woff2 files only).
cp "$hm/dist/embed-amd.js" "$hm/dist/"*.woff2 "$out/html-manager/"
cp "$hm/dist/embed.js.LICENSE.txt" "$out/html-manager/THIRD-PARTY-LICENSES.txt"
cp "$fa/LICENSE.txt" "$out/html-manager/LICENSE-fontawesome.txt"
# The npm package declares BSD-3-Clause but ships no licence file: write the standard text with the
# ipywidgets project's copyright line (html-manager lives in that repository).
test "$(node -p 'require(process.argv[1]).license' "$hm/package.json")" = BSD-3-Clause
cat > "$out/html-manager/LICENSE" <<'TXT'
@jupyter-widgets/html-manager is distributed under the BSD 3-Clause License:

Copyright (c) 2015 Project Jupyter Contributors
All rights reserved.

Redistribution and use in source and binary forms, with or without modification, are permitted
provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this list of conditions
   and the following disclaimer.
2. Redistributions in binary form must reproduce the above copyright notice, this list of
   conditions and the following disclaimer in the documentation and/or other materials provided
   with the distribution.
3. Neither the name of the copyright holder nor the names of its contributors may be used to
   endorse or promote products derived from this software without specific prior written
   permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR
IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND
FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR
CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE,
DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER
IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT
OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
TXT

du -sh "$out"
