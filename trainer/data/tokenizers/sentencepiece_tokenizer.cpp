#include "trainer/data/tokenizers/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "core/error.h"
#include "trainer/data/gpt2_tokenizer.h"

namespace kiln::data {

namespace {

constexpr const char* kFlag = "--tokenizer-model";

std::string model_problem(const std::string& path, const std::string& why) {
  std::string s = kFlag;
  s += ' ';
  s += path;
  s += ": ";
  s += why;
  return s;
}

}  // namespace

const char* SentencePieceTokenizer::type_name(Wrapper wrapper) {
  switch (wrapper) {
    case Wrapper::kGpt: return "GPTSentencePieceTokenizer";
    case Wrapper::kLlama2: return "Llama2Tokenizer";
    case Wrapper::kPlain: return "SentencePieceTokenizer";
  }
  return "?";
}

std::shared_ptr<const SentencePieceTokenizer> SentencePieceTokenizer::load(const std::string& path, Wrapper wrapper) {
  std::string bytes = read_tokenizer_file(path, kFlag);
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  // An empty file parses as an empty proto, which the library then finds
  // has no pieces; say what it is instead.
  if (bytes.empty()) throw Error(model_problem(path, "empty file, not a SentencePiece model (a tokenizer.model)"));
  sentencepiece::util::Status status = processor->LoadFromSerializedProto(bytes);
  if (!status.ok()) {
    // The library's message names its own source line; keep what helps.
    std::string said = status.message();
    std::string why = "not a SentencePiece model (a tokenizer.model): ";
    if (said.find("ParseFromArray") != std::string::npos) {
      why += "its bytes do not parse as one";
    } else {
      why += "libsentencepiece says \"";
      for (char c : said) why += c == '\n' ? ' ' : c;
      why += '"';
    }
    throw Error(model_problem(path, why));
  }
  std::string hash = content_sha256({bytes});
  return std::shared_ptr<const SentencePieceTokenizer>(
      new SentencePieceTokenizer(std::move(processor), wrapper, path, std::move(hash)));
}

SentencePieceTokenizer::SentencePieceTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor,
                                               Wrapper wrapper, const std::string& path, std::string sha256)
    : processor_(std::move(processor)), wrapper_(wrapper), sha256_(std::move(sha256)) {
  pieces_ = processor_->GetPieceSize();
  vocab_size_ = pieces_;
  if (wrapper_ != Wrapper::kPlain) {
    // Megatron takes eod = eos_id() (and Llama2's bos = bos_id()) unchecked;
    // a model without them would put -1 into the data.
    eod_ = processor_->eos_id();
    bos_ = processor_->bos_id();
    if (wrapper_ == Wrapper::kLlama2 && bos_ < 0)
      throw Error(model_problem(path,
                                "the model has no BOS piece (bos_id -1), which Llama2Tokenizer puts first; "
                                "use GPTSentencePieceTokenizer or train it with a bos_id"));
    if (eod_ < 0) {
      std::string why = "the model has no EOS piece (eos_id -1), which ";
      why += type_name(wrapper_);
      why += " uses as EOD; train it with an eos_id";
      throw Error(model_problem(path, why));
    }
    return;
  }
  // Megatron's _SentencePieceTokenizer._initalize with vocab_extra_ids = 0.
  for (const char* piece : {"<CLS>", "<SEP>", "<EOD>", "<MASK>"}) add_special(piece);
  auto model_piece = [&](int id, const char* fallback) {
    return id >= 0 && id < pieces_ ? processor_->IdToPiece(id) : std::string(fallback);
  };
  add_special(model_piece(processor_->pad_id(), "<PAD>"));
  add_special(model_piece(processor_->bos_id(), "<BOS>"));
  add_special(model_piece(processor_->eos_id(), "<EOS>"));
  for (const auto& [piece, id] : specials_) {
    if (piece == "<EOD>") eod_ = id;
    if (piece == model_piece(processor_->bos_id(), "<BOS>")) bos_ = id;
  }
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

void SentencePieceTokenizer::add_special(const std::string& piece) {
  for (const auto& special : specials_)
    if (special.first == piece) return;  // already special: Megatron's dict keeps its first place
  int32_t id = processor_->PieceToId(piece);
  // PieceToId answers unk for a piece the model lacks; only a real match counts.
  if (id < 0 || id >= pieces_ || processor_->IdToPiece(id) != piece) id = static_cast<int32_t>(vocab_size_++);
  specials_.emplace_back(piece, id);
}

const std::string* SentencePieceTokenizer::special_piece(int32_t id) const {
  for (const auto& [piece, special_id] : specials_)
    if (special_id == id) return &piece;
  return nullptr;
}

void SentencePieceTokenizer::encode_pieces(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::vector<int> ids;
  sentencepiece::util::Status status = processor_->Encode(text, &ids);
  if (!status.ok()) throw Error(std::string("SentencePiece encode failed: ") + status.message());
  out.insert(out.end(), ids.begin(), ids.end());
}

void SentencePieceTokenizer::encode(std::string_view text, std::vector<int32_t>& out) const {
  size_t bad = Gpt2Tokenizer::invalid_utf8_at(text);
  if (bad != std::string_view::npos) {
    std::string why = "text is not valid UTF-8 at byte ";
    why += std::to_string(bad);
    why += "; ";
    why += type();
    why += " reads UTF-8";
    throw Error(why);
  }
  if (wrapper_ == Wrapper::kLlama2) out.push_back(bos_);
  if (wrapper_ != Wrapper::kPlain) {
    encode_pieces(text, out);
    return;
  }
  // Megatron's loop: the special piece that occurs first (the first listed
  // on a tie) is cut out, the text before it encoded, and so on. Byte
  // offsets order matches like Python's character offsets do, since both
  // the text and the pieces are valid UTF-8.
  size_t at = 0;
  for (;;) {
    size_t next = std::string_view::npos;
    const std::pair<std::string, int32_t>* found = nullptr;
    for (const auto& special : specials_) {
      size_t pos = text.find(special.first, at);
      if (pos < next) next = pos, found = &special;
    }
    if (!found) break;
    encode_pieces(text.substr(at, next - at), out);
    out.push_back(found->second);
    at = next + found->first.size();
  }
  encode_pieces(text.substr(at), out);
}

void SentencePieceTokenizer::decode_pieces(const int32_t* ids, size_t n, std::string& out) const {
  std::vector<int> piece_ids(ids, ids + n);
  std::string text;
  sentencepiece::util::Status status = processor_->Decode(piece_ids, &text);
  if (!status.ok()) throw Error(std::string("SentencePiece decode failed: ") + status.message());
  out += text;
}

std::string SentencePieceTokenizer::decode(const int32_t* ids, size_t n) const {
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] >= 0 && ids[i] < vocab_size_) continue;
    std::string why = "token id ";
    why += std::to_string(ids[i]);
    why += " is outside ";
    why += type();
    why += "'s vocabulary (0..";
    why += std::to_string(vocab_size_ - 1);
    why += ")";
    throw Error(why);
  }
  std::string text;
  if (wrapper_ != Wrapper::kPlain) {
    decode_pieces(ids, n, text);
    return text;
  }
  // Megatron: each special id ends the run of pieces before it, and is
  // written as its piece between spaces.
  size_t run = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string* piece = special_piece(ids[i]);
    if (!piece) continue;
    decode_pieces(ids + run, i - run, text);
    text += ' ';
    text += *piece;
    text += ' ';
    run = i + 1;
  }
  decode_pieces(ids + run, n - run, text);
  return text;
}

}  // namespace kiln::data
