#!/usr/bin/env bash
# Regenerates the small datasets shipped in perf-configs/datasets/ (meta.lst layout of
# seed-tts-eval). Only the voice-clone subset has audio: its reference clips are spoken by
# espeak-ng and stored as 16 kHz mono s16 WAV. The outputs are committed, so CI and the
# suite never need espeak-ng; run this only to change the datasets.
#
#   apt-get install -y espeak-ng sox   # once
#   bash scripts/make-datasets.sh
#
# All sentences are original text written for dfx-perf.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)/perf-configs/datasets"
for tool in espeak-ng sox; do
  command -v "$tool" >/dev/null || { echo "make-datasets: $tool not found (apt-get install -y espeak-ng sox)" >&2; exit 2; }
done

# --- seed-tts-eval-subset (voice clone): id | reference transcript | text to synthesise
clone="$root/seed-tts-eval-subset/en"
rm -rf "$clone"
mkdir -p "$clone/wavs"
voices=(en-us en-gb en-us+f3 en-gb+m3 en-us+m2 en-gb+f2 en-us+f4 en-us+m4 en-gb+f4 en-us+m7)
refs=(
  "Turn left at the bakery."
  "The kettle is boiling."
  "Bring a warm coat."
  "Our train leaves at noon."
  "Please close the window."
  "The garden needs rain."
  "Call me after lunch."
  "The lamp is too bright."
  "We painted the fence blue."
  "Keep the receipt safe."
)
texts=(
  "The ferry waited at the pier while gulls circled above the crates of fresh oranges."
  "She wrote every measurement twice, because the old ruler had lost its first centimetre."
  "A quiet library at dusk is the best place to hear the radiators tick."
  "When the storm passed, the whole street came out to sweep leaves from the gutters."
  "He tuned the violin by ear and then checked it against the piano, just to be sure."
  "The recipe asked for a pinch of salt, which nobody in the kitchen could agree on."
  "Seven bicycles leaned against the fence, each one with a different coloured bell."
  "Mapping the cave took three summers and more batteries than anyone had planned for."
  "The museum guide paused at the clock and asked us to listen to its slow heartbeat."
  "By morning the snow had covered the tracks, so the fox's route remained a secret."
)
{
  echo "# dfx-perf voice-clone smoke set: utt_id|ref_text|ref_wav|text (original sentences; clips by espeak-ng)"
  for i in "${!refs[@]}"; do
    id=$(printf "clone_%02d" "$((i + 1))")
    espeak-ng -v "${voices[$i]}" -s 240 -w "$clone/wavs/$id.raw.wav" "${refs[$i]}"
    sox -v 0.8 "$clone/wavs/$id.raw.wav" -r 16000 -c 1 -b 16 "$clone/wavs/$id.wav" \
      silence 1 0.02 0.5% reverse silence 1 0.02 0.5% reverse
    rm "$clone/wavs/$id.raw.wav"
    echo "$id|${refs[$i]}|wavs/$id.wav|${texts[$i]}"
  done
} > "$clone/meta.lst"

# --- seed_tts_smoke (default voice): text only; ref fields empty
smoke="$root/seed_tts_smoke/en"
rm -rf "$smoke"
mkdir -p "$smoke"
smoke_texts=(
  "Good morning, the weather is mild today."
  "Please remember to water the tomato plants before you leave."
  "The bus was late again, so I walked the last two kilometres."
  "Forty-two lanterns floated down the river during the festival."
  "Could you pass the bread and the little dish of olive oil, please?"
  "My grandfather kept every postcard he ever received in a tin box."
  "The printer on the third floor only works if you ask it politely."
  "A narrow staircase led to a room full of maps, compasses and dusty globes."
  "We counted the stars until the clouds rolled in from the west."
  "Her presentation ended with a slide that simply said: thank you, questions?"
  "On Tuesdays the market sells honey, cheese, and bright green apples."
  "The cat ignored the new toy and slept in the cardboard box instead."
  "If the alarm rings twice, walk calmly to the nearest exit and wait outside."
  "The old lighthouse keeper painted the door red every spring."
  "Thunder rolled across the valley, but the picnic carried on regardless."
  "Quiet trains, warm seats, and a good book make a long journey feel short."
  "The orchestra tuned up while latecomers searched for their seats in the dark."
  "He fixed the squeaky hinge with a drop of oil and a satisfied grin."
  "Every evening the baker leaves yesterday's loaves on a shelf by the door for anyone who needs them."
  "The hiking trail climbs steeply for an hour, then opens onto a meadow full of wild thyme."
  "Nobody expected the small robot to win the chess tournament, least of all its programmer."
  "The library will extend its opening hours during the exam period, starting next Monday."
  "She planted sunflowers along the fence, and by August they were taller than the shed."
  "The bridge was repainted in a shade of green that the town council had argued about for months."
  "When the power went out, we played cards by candlelight and told stories about the old house."
  "The scientist labelled each jar carefully: pond water, river water, rain water, and a mystery sample from the well."
  "After three failed attempts, the kite finally caught the wind and climbed high above the dunes, tugging at its string."
  "The town clock has been five minutes fast for as long as anyone can remember, and the townsfolk simply plan around it."
  "The expedition packed dried fruit, spare socks, two compasses and a battered notebook, then set off along the frozen river before the sun had even cleared the hills."
  "Although the forecast promised clear skies, the ferry captain insisted on checking the barometer twice, and by noon everyone on board was grateful for her caution and for the warm tea."
)
{
  echo "# dfx-perf default-voice smoke set: utt_id|ref_text|ref_wav|text (original sentences, no reference audio)"
  for i in "${!smoke_texts[@]}"; do
    printf "smoke_%02d|||%s\n" "$((i + 1))" "${smoke_texts[$i]}"
  done
} > "$smoke/meta.lst"

# --- seed_tts_design (voice design): 5th field is the voice description
design="$root/seed_tts_design/en"
rm -rf "$design"
mkdir -p "$design"
design_rows=(
  "Welcome aboard, and thank you for flying with us this evening.|A calm, low male voice with a slight smile, like an airline captain."
  "Once upon a time, a tiny dragon was afraid of the dark.|A warm, gentle female storyteller reading to children at bedtime."
  "Breaking news: the river has reached its highest level in fifty years.|A crisp, urgent news anchor with clear articulation."
  "Let's take a deep breath in, and slowly let it out again.|A soft, slow, soothing voice for a meditation class."
  "Goal! What a finish from the edge of the box!|An excited sports commentator, fast and loud."
  "The quarterly figures show steady growth across all regions.|A confident, neutral business presenter in her forties."
  "Don't touch that button. I mean it. Step away from the console.|A stern older man, quiet but firm."
  "Hey, did you see the sunset tonight? It was unreal.|A cheerful young woman chatting with a friend."
  "Turn the dial slowly until you hear a faint click.|A patient technician explaining a task, measured pace."
  "In the beginning, there was only the sound of the sea.|A deep, resonant documentary narrator."
  "Ladies and gentlemen, the museum will close in fifteen minutes.|A polite announcer with a light British accent."
  "I can't believe we actually made it to the top!|A breathless, joyful hiker, slightly out of breath."
)
{
  echo "# dfx-perf voice-design smoke set: utt_id|ref_text|ref_wav|text|voice_description (original sentences)"
  for i in "${!design_rows[@]}"; do
    printf "design_%02d|||%s\n" "$((i + 1))" "${design_rows[$i]}"
  done
} > "$design/meta.lst"

echo "datasets written under $root"
du -sh "$root"/* 
