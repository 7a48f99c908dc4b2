#include "trainer/data/corpus.h"

#include <algorithm>
#include <iterator>

#include "core/error.h"
#include "trainer/rng.h"

namespace kiln::trainer {
namespace {

// ---- The vocabulary. Small on purpose: a tiny byte-level model can learn
// the spelling of every word within a few hundred steps, and what is left to
// learn is grammar, agreement and which words go together.

struct Person {
  const char* name;
  bool female;
};
const Person kPeople[] = {
    {"Anna", true},  {"Ben", false},   {"Clara", true}, {"David", false}, {"Emma", true},   {"Felix", false},
    {"Grace", true}, {"Henry", false}, {"Iris", true},  {"Jack", false},  {"Kate", true},   {"Leo", false},
    {"Maria", true}, {"Noah", false},  {"Nora", true},  {"Oscar", false}, {"Rosa", true},   {"Paul", false},
    {"Lily", true},  {"Sam", false},   {"Zoe", true},   {"Tom", false},   {"Ruth", true},   {"Victor", false},
    {"Wendy", true}, {"Omar", false},  {"Lucy", true},  {"Hugo", false},  {"Hannah", true}, {"Peter", false},
    {"Sofia", true}, {"Adam", false},  {"Mia", true},   {"Simon", false}, {"Ella", true},   {"Daniel", false}};

struct Noun {
  const char* one;
  const char* many;
};
// Creatures can act: they are subjects, and what people meet and help.
const Noun kCreatures[] = {{"farmer", "farmers"},
                           {"teacher", "teachers"},
                           {"baker", "bakers"},
                           {"sailor", "sailors"},
                           {"child", "children"},
                           {"girl", "girls"},
                           {"boy", "boys"},
                           {"woman", "women"},
                           {"man", "men"},
                           {"king", "kings"},
                           {"queen", "queens"},
                           {"doctor", "doctors"},
                           {"dog", "dogs"},
                           {"cat", "cats"},
                           {"horse", "horses"},
                           {"bird", "birds"},
                           {"fox", "foxes"},
                           {"rabbit", "rabbits"},
                           {"wolf", "wolves"},
                           {"bear", "bears"},
                           {"owl", "owls"},
                           {"mouse", "mice"},
                           {"fisherman", "fishermen"},
                           {"painter", "painters"},
                           {"soldier", "soldiers"},
                           {"student", "students"},
                           {"merchant", "merchants"},
                           {"goat", "goats"},
                           {"duck", "ducks"},
                           {"neighbor", "neighbors"}};
const Noun kFoods[] = {{"apple", "apples"}, {"cake", "cakes"},      {"egg", "eggs"},           {"pear", "pears"},
                       {"pie", "pies"},     {"carrot", "carrots"},  {"potato", "potatoes"},    {"plum", "plums"},
                       {"fish", "fish"},    {"loaf", "loaves"},     {"cookie", "cookies"},     {"orange", "oranges"},
                       {"onion", "onions"}, {"cherry", "cherries"}, {"sandwich", "sandwiches"}};
const Noun kThings[] = {
    {"book", "books"},       {"letter", "letters"},     {"cup", "cups"},           {"key", "keys"},
    {"box", "boxes"},        {"hat", "hats"},           {"coat", "coats"},         {"lamp", "lamps"},
    {"basket", "baskets"},   {"stone", "stones"},       {"flower", "flowers"},     {"map", "maps"},
    {"boat", "boats"},       {"bell", "bells"},         {"candle", "candles"},     {"ring", "rings"},
    {"coin", "coins"},       {"rope", "ropes"},         {"chair", "chairs"},       {"blanket", "blankets"},
    {"window", "windows"},   {"umbrella", "umbrellas"}, {"shoe", "shoes"},         {"bag", "bags"},
    {"pen", "pens"},         {"picture", "pictures"},   {"ball", "balls"},         {"kite", "kites"},
    {"clock", "clocks"},     {"bottle", "bottles"},     {"spoon", "spoons"},       {"bowl", "bowls"},
    {"feather", "feathers"}, {"shell", "shells"},       {"jar", "jars"},           {"ladder", "ladders"},
    {"drum", "drums"},       {"whistle", "whistles"},   {"envelope", "envelopes"}, {"mirror", "mirrors"}};
const char* const kPlaces[] = {"garden", "forest", "river",    "market", "village", "kitchen", "school",  "bridge",
                               "harbor", "hill",   "field",    "house",  "castle",  "library", "station", "beach",
                               "road",   "farm",   "mountain", "valley", "lake",    "town",    "shop",    "tower",
                               "cave",   "meadow", "island",   "park",   "mill",    "orchard"};
const char* const kAdjectives[] = {
    "small", "old",    "big",   "little", "red",     "green",     "blue",    "yellow", "white",   "black",
    "happy", "quiet",  "warm",  "cold",   "bright",  "dark",      "tall",    "kind",   "brave",   "clever",
    "tired", "hungry", "heavy", "new",    "strange", "beautiful", "gentle",  "wild",   "busy",    "lonely",
    "soft",  "sweet",  "wet",   "clean",  "empty",   "round",     "golden",  "silver", "careful", "proud",
    "funny", "shy",    "angry", "sleepy", "noisy",   "lucky",     "curious", "ancient"};
const char* const kAdverbs[] = {"slowly", "quickly", "quietly", "happily",  "carefully", "suddenly", "softly", "gently",
                                "loudly", "sadly",   "again",   "together", "early",     "late",     "at last"};
const char* const kPrepositions[] = {"in",     "near",    "behind", "under",  "beside", "across",
                                     "inside", "outside", "above",  "around", "along",  "beyond"};
const char* const kNumberWords[] = {"two",   "three", "four", "five",   "six",    "seven",
                                    "eight", "nine",  "ten",  "eleven", "twelve", "twenty"};
const char* const kDays[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
const char* const kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                               "July",    "August",   "September", "October", "November", "December"};
const char* const kSeasons[] = {"spring", "summer", "autumn", "winter"};
const char* const kTimes[] = {"In the morning", "At night",       "After dinner",     "Before sunrise",
                              "One day",        "Later that day", "The next morning", "At noon",
                              "In the evening", "Long ago",       "Soon after",       "That afternoon"};

struct Verb {
  const char* base;
  const char* past;
};
const Verb kFoodVerbs[] = {{"eat", "ate"},      {"cook", "cooked"}, {"buy", "bought"},  {"sell", "sold"},
                           {"share", "shared"}, {"bake", "baked"},  {"wash", "washed"}, {"pick", "picked"}};
const Verb kThingVerbs[] = {{"find", "found"},  {"take", "took"},     {"carry", "carried"}, {"open", "opened"},
                            {"hold", "held"},   {"bring", "brought"}, {"make", "made"},     {"paint", "painted"},
                            {"fix", "fixed"},   {"break", "broke"},   {"clean", "cleaned"}, {"hide", "hid"},
                            {"lose", "lost"},   {"keep", "kept"},     {"drop", "dropped"},  {"draw", "drew"},
                            {"throw", "threw"}, {"catch", "caught"},  {"pull", "pulled"},   {"see", "saw"}};
const Verb kPersonVerbs[] = {{"help", "helped"},     {"call", "called"},   {"visit", "visited"},
                             {"follow", "followed"}, {"meet", "met"},      {"thank", "thanked"},
                             {"greet", "greeted"},   {"watch", "watched"}, {"remember", "remembered"},
                             {"wake", "woke"},       {"see", "saw"},       {"find", "found"}};
const Verb kIntransitive[] = {
    {"walk", "walked"},   {"run", "ran"},       {"sleep", "slept"},       {"sing", "sang"},     {"laugh", "laughed"},
    {"smile", "smiled"},  {"wait", "waited"},   {"dance", "danced"},      {"swim", "swam"},     {"jump", "jumped"},
    {"sit", "sat"},       {"play", "played"},   {"work", "worked"},       {"rest", "rested"},   {"listen", "listened"},
    {"cry", "cried"},     {"shout", "shouted"}, {"whisper", "whispered"}, {"hurry", "hurried"}, {"wander", "wandered"},
    {"climb", "climbed"}, {"read", "read"},     {"stay", "stayed"},       {"think", "thought"}};
const char* const kMotions[] = {"went", "walked", "ran", "hurried", "returned", "came back", "rode", "sailed"};

template <typename T, size_t N>
const T& pick(Rng& r, const T (&a)[N]) {
  return a[r.below(N)];
}

// The lowest of three uniform draws: early entries come up far more often than
// late ones, a cheap stand-in for the skewed word frequencies of real text.
uint64_t common_index(Rng& r, uint64_t n) {
  const uint64_t i = r.below(n), j = r.below(n), k = r.below(n);
  return std::min(i, std::min(j, k));
}

template <typename T, size_t N>
const T& pick_common(Rng& r, const T (&a)[N]) {
  return a[common_index(r, N)];
}

bool starts_with_vowel(const std::string& w) {
  return !w.empty() && std::string("aeiou").find(w[0]) != std::string::npos;
}

std::string a_or_an(const std::string& phrase) { return (starts_with_vowel(phrase) ? "an " : "a ") + phrase; }

// Capitalizes the first letter (skipping a leading quote mark).
std::string cap(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
      break;
    } else if (c >= 'A' && c <= 'Z') {
      break;
    }
  return s;
}

struct Subject {
  std::string text;
  bool plural;
};

// Concatenates left to right. The operands of `a + b` may be evaluated in
// either order, which would make the text depend on the compiler whenever
// both draw from the Rng; `<<` is sequenced left to right since C++17.
struct Cat {
  std::string s;
  Cat& operator<<(const std::string& x) {
    s += x;
    return *this;
  }
};

// Writes one paragraph at a time around a small cast (a hero, a friend, a
// place) that recurs within the paragraph, so there is something for
// attention to look back at beyond the last few words.
class Writer {
 public:
  explicit Writer(Rng& r) : r_(r) {}

  std::string chapter_heading(int number) {
    Cat c;
    c << "Chapter " << std::to_string(number) << ": The " << cap(pick(r_, kAdjectives)) << " "
      << cap(pick(r_, kCreatures).one);
    if (chance(50)) c << " and the " << cap(pick(r_, kThings).one);
    return c.s;
  }

  std::string paragraph() {
    hero_ = &pick_common(r_, kPeople);
    do friend_ = &pick_common(r_, kPeople);
    while (friend_ == hero_);
    place_ = pick_common(r_, kPlaces);
    hero_named_ = false;
    return chance(25) ? dialogue() : narrative();
  }

 private:
  bool chance(uint64_t percent) { return r_.below(100) < percent; }

  std::string number(uint64_t lo, uint64_t hi) { return std::to_string(lo + r_.below(hi - lo + 1)); }

  std::string count() { return chance(60) ? pick(r_, kNumberWords) : number(2, 99); }

  std::string adj_maybe(uint64_t percent) {
    return chance(percent) ? std::string(pick_common(r_, kAdjectives)) + " " : "";
  }

  std::string pronoun() const { return hero_->female ? "she" : "he"; }
  std::string possessive() const { return hero_->female ? "her" : "his"; }

  Subject subject() {
    const uint64_t roll = r_.below(100);
    if (roll < 40) {
      if (hero_named_ && chance(50)) return {pronoun(), false};
      hero_named_ = true;
      return {hero_->name, false};
    }
    if (roll < 52) return {friend_->name, false};
    if (roll < 60) {
      hero_named_ = true;
      return {std::string(hero_->name) + " and " + friend_->name, true};
    }
    const Noun& c = pick_common(r_, kCreatures);
    const bool plural = chance(20);
    return {"the " + adj_maybe(40) + (plural ? c.many : c.one), plural};
  }

  std::string object(const Noun* list, size_t size) {
    const Noun& n = list[common_index(r_, size)];
    const uint64_t roll = r_.below(100);
    if (roll < 40) return a_or_an(adj_maybe(45) + n.one);
    if (roll < 60) return "the " + adj_maybe(35) + n.one;
    if (roll < 72) return "the " + adj_maybe(30) + n.many;
    if (roll < 88) return (Cat() << count() << " " << adj_maybe(25) << n.many).s;
    return possessive() + " " + adj_maybe(30) + n.one;
  }
  std::string thing() { return object(kThings, std::size(kThings)); }
  std::string food() { return object(kFoods, std::size(kFoods)); }

  std::string person() {
    const uint64_t roll = r_.below(100);
    if (roll < 45) return friend_->name;
    if (roll < 60) return pick(r_, kPeople).name;
    const Noun& c = pick_common(r_, kCreatures);
    return "the " + adj_maybe(40) + c.one;
  }

  std::string place_phrase() {
    const char* place = chance(60) ? place_ : pick_common(r_, kPlaces);
    return (Cat() << pick_common(r_, kPrepositions) << " the " << adj_maybe(25) << place).s;
  }

  std::string predicate() {
    const uint64_t roll = r_.below(100);
    if (roll < 35) return (Cat() << pick(r_, kThingVerbs).past << " " << thing()).s;
    if (roll < 55) return (Cat() << pick(r_, kFoodVerbs).past << " " << food()).s;
    if (roll < 70) return (Cat() << pick(r_, kPersonVerbs).past << " " << person()).s;
    return pick_common(r_, kIntransitive).past;
  }

  std::string when() {
    const uint64_t roll = r_.below(100);
    if (roll < 55) return pick(r_, kTimes);
    if (roll < 70) return std::string("On ") + pick(r_, kDays);
    if (roll < 82) return std::string("In ") + pick(r_, kMonths);
    if (roll < 92) return std::string("In ") + pick(r_, kSeasons);
    return "In " + number(1700, 1999);
  }

  std::string sentence() {
    const uint64_t roll = r_.below(100);
    Cat c;
    if (roll < 24) {
      c << subject().text << " " << predicate();
      if (chance(45)) c << " " << place_phrase();
      if (chance(15)) c << " " << pick(r_, kAdverbs);
    } else if (roll < 36) {
      c << subject().text << " " << pick_common(r_, kIntransitive).past;
      if (chance(35)) c << " " << pick(r_, kAdverbs);
      if (chance(55)) c << " " << place_phrase();
    } else if (roll < 46) {
      c << subject().text << " " << pick(r_, kMotions) << " to the " << adj_maybe(20);
      c << (chance(70) ? place_ : pick_common(r_, kPlaces));
    } else if (roll < 54) {
      c << when() << ", " << subject().text << " " << predicate();
    } else if (roll < 62) {
      const Subject s = subject();
      c << s.text << (s.plural ? " were " : " was ") << pick_common(r_, kAdjectives);
      if (chance(35)) c << " and " << pick(r_, kAdjectives);
    } else if (roll < 68) {
      const Noun& n = chance(50) ? pick_common(r_, kThings) : pick_common(r_, kFoods);
      if (chance(40))
        c << "there was " << a_or_an(adj_maybe(60) + n.one) << " " << place_phrase();
      else
        c << "there were " << count() << " " << adj_maybe(40) << n.many << " " << place_phrase();
    } else if (roll < 76) {
      static const char* const joins[] = {", and ", ", but ", ", so ", " while "};
      c << subject().text << " " << predicate() << pick(r_, joins) << subject().text << " "
        << pick_common(r_, kIntransitive).past;
    } else if (roll < 81) {
      c << subject().text << " wanted to " << pick(r_, kThingVerbs).base << " " << thing();
      if (chance(40)) c << ", but it was too " << pick(r_, kAdjectives);
    } else if (roll < 86) {
      c << "when " << subject().text << " " << pick_common(r_, kIntransitive).past << ", " << subject().text << " "
        << predicate();
    } else if (roll < 90) {
      c << subject().text << " gave " << person() << " " << (chance(50) ? thing() : food());
    } else if (roll < 94) {
      static const char* const weather[] = {"it was raining", "the sun was shining", "the wind was cold",
                                            "it was snowing", "the sky was grey",    "the air was warm"};
      c << pick(r_, weather);
      if (chance(50)) c << " " << place_phrase();
    } else if (roll < 97) {
      c << subject().text << " had " << count() << " " << pick_common(r_, kThings).many << " and " << count() << " "
        << pick_common(r_, kFoods).many;
    } else {
      c << subject().text << " said that the " << pick_common(r_, kThings).one << " was "
        << pick_common(r_, kAdjectives);
    }
    return cap(c.s) + ".";
  }

  std::string narrative() {
    Cat c;
    const uint64_t n = 3 + r_.below(5);
    for (uint64_t i = 0; i < n; ++i) c << (i ? " " : "") << sentence();
    return c.s;
  }

  // Spoken lines are present tense, so the model also sees is/are, do/does.
  std::string question() {
    Cat c;
    switch (r_.below(8)) {
      case 0: c << "Where is the " << pick_common(r_, kThings).one << "?"; break;
      case 1: c << "Did you see the " << pick_common(r_, kCreatures).one << "?"; break;
      case 2: c << "Can you help me?"; break;
      case 3: c << "What time is it?"; break;
      case 4: c << "Who took my " << pick_common(r_, kThings).one << "?"; break;
      case 5: c << "Is the " << place_ << " far from here?"; break;
      case 6: c << "How many " << pick_common(r_, kFoods).many << " do you have?"; break;
      default: c << "Will you come to the " << place_ << " with me?";
    }
    return c.s;
  }

  std::string statement() {
    Cat c;
    switch (r_.below(10)) {
      case 0: c << "I found " << thing() << " " << place_phrase(); break;
      case 1: c << "It is " << place_phrase(); break;
      case 2: c << "I do not know"; break;
      case 3: c << "We should go to the " << place_; break;
      case 4:
        c << "The " << pick_common(r_, kCreatures).one << " is " << pick_common(r_, kAdjectives) << " today";
        break;
      case 5: c << "I have " << count() << " " << pick_common(r_, kFoods).many; break;
      case 6: c << "It is " << number(1, 12) << " o'clock"; break;
      case 7: c << (chance(50) ? "Yes, of course" : "No, not today"); break;
      case 8: c << "Thank you, " << friend_->name; break;
      default: c << "Let us " << pick(r_, kIntransitive).base << " " << place_phrase();
    }
    return c.s;
  }

  std::string dialogue() {
    Cat p;
    const uint64_t lines = 2 + r_.below(3);
    for (uint64_t i = 0; i < lines; ++i) {
      const std::string speaker = (i % 2 == 0) ? hero_->name : friend_->name;
      p << (i ? "\n" : "");
      if (chance(40)) {
        p << "\"" << question() << "\" asked " << speaker << ".";
        continue;
      }
      const std::string s = cap(statement());
      switch (r_.below(3)) {
        case 0: p << "\"" << s << ",\" said " << speaker << "."; break;
        case 1: p << speaker << " said, \"" << s << ".\""; break;
        default: p << "\"" << s << ",\" " << speaker << " said " << pick(r_, kAdverbs) << ".";
      }
    }
    return p.s;
  }

  Rng& r_;
  const Person* hero_ = nullptr;
  const Person* friend_ = nullptr;
  const char* place_ = nullptr;
  bool hero_named_ = false;
};

}  // namespace

std::string generate_corpus(size_t bytes, uint64_t seed) {
  Rng rng(seed, /*stream=*/0x636f72707573ULL);  // "corpus": apart from other users of the seed
  Writer w(rng);
  std::string out;
  out.reserve(bytes + 1024);
  int chapter = 1;
  while (out.size() < bytes) {
    out += w.chapter_heading(chapter++) + "\n\n";
    const uint64_t paragraphs = 6 + rng.below(10);
    for (uint64_t i = 0; i < paragraphs && out.size() < bytes; ++i) out += w.paragraph() + "\n\n";
  }
  out.resize(bytes);
  return out;
}

std::vector<int32_t> bytes_to_tokens(const std::string& text) {
  std::vector<int32_t> tokens(text.size());
  for (size_t i = 0; i < text.size(); ++i) tokens[i] = static_cast<unsigned char>(text[i]);
  return tokens;
}

std::string tokens_to_bytes(const std::vector<int32_t>& tokens) {
  std::string text(tokens.size(), '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= kByteVocabSize)
      throw Error("token " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                  " is outside the byte vocabulary [0, 256)");
    text[i] = static_cast<char>(static_cast<unsigned char>(tokens[i]));
  }
  return text;
}

}  // namespace kiln::trainer
