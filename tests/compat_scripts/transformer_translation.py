"""The PyTorch tutorial "Language Translation with nn.Transformer" (and pytorch/examples'
language_translation/): Seq2SeqTransformer = TokenEmbedding (scaled by sqrt(emb_size)) +
sinusoidal PositionalEncoding buffer + nn.Transformer(batch_first=False) + generator Linear;
create_mask with nn.Transformer.generate_square_subsequent_mask and src/tgt padding masks (also passed
as memory_key_padding_mask); CrossEntropyLoss(ignore_index=PAD_IDX); Adam(betas=(0.9, 0.98), eps=1e-9);
greedy_decode for a translation at the end. The Multi30k German-English corpus is replaced by a
synthetic "translation" (reverse the sentence and shift every token) over variable-length padded
batches, the model is small, dropout is 0, and the weights come from a fixed NumPy seed (torch's and
tensorlab's random generators differ), so the losses print the same on torch and under
`python -m tensorlab.compat`."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
from torch import Tensor
from torch.nn import Transformer
from torch.nn.utils.rnn import pad_sequence

from _npinit import init_from_numpy

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--device", default="cpu")
args = parser.parse_args()
DEVICE = torch.device(args.device)
rng = np.random.default_rng(0)
UNK_IDX, PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2, 3
SRC_VOCAB_SIZE = TGT_VOCAB_SIZE = 14


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size: int, dropout: float, maxlen: int = 64):
        super().__init__()
        den = torch.exp(- torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('pos_embedding', pos_embedding)

    def forward(self, token_embedding: Tensor):
        return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens: Tensor):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size, tgt_vocab_size,
                 dim_feedforward=64, dropout=0.0):
        super().__init__()
        self.transformer = Transformer(d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                       num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                                       dropout=dropout)
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
        return self.generator(outs)

    def encode(self, src: Tensor, src_mask: Tensor):
        return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

    def decode(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor):
        return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)


def generate_square_subsequent_mask(sz):
    return Transformer.generate_square_subsequent_mask(sz, device=DEVICE)


def create_mask(src, tgt):
    src_seq_len, tgt_seq_len = src.shape[0], tgt.shape[0]
    tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
    src_mask = torch.zeros((src_seq_len, src_seq_len), device=DEVICE).type(torch.bool)
    src_padding_mask = (src == PAD_IDX).transpose(0, 1)
    tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask


def sentence_pair():
    words = rng.integers(4, SRC_VOCAB_SIZE - 1, rng.integers(2, 7))
    target = (words[::-1] + 1)  # "translation": reversed, every token shifted
    wrap = lambda ids: torch.cat((torch.tensor([BOS_IDX]), torch.tensor(ids.copy()), torch.tensor([EOS_IDX])))
    return wrap(words), wrap(target)


def collate_fn(batch):
    src_batch, tgt_batch = zip(*batch)
    return pad_sequence(src_batch, padding_value=PAD_IDX), pad_sequence(tgt_batch, padding_value=PAD_IDX)


transformer = Seq2SeqTransformer(1, 1, 16, 2, SRC_VOCAB_SIZE, TGT_VOCAB_SIZE)
init_from_numpy(transformer, rng)
transformer = transformer.to(DEVICE)
loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX)
optimizer = torch.optim.Adam(transformer.parameters(), lr=0.003, betas=(0.9, 0.98), eps=1e-9)
train_batches = [collate_fn([sentence_pair() for _ in range(6)]) for _ in range(4)]
val_batch = collate_fn([sentence_pair() for _ in range(6)])


def train_epoch(model, optimizer):
    model.train()
    losses = 0
    for src, tgt in train_batches:
        src, tgt = src.to(DEVICE), tgt.to(DEVICE)
        tgt_input = tgt[:-1, :]
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
        logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
        optimizer.zero_grad()
        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        losses += loss.item()
    return losses / len(train_batches)


def evaluate(model):
    model.eval()
    src, tgt = val_batch[0].to(DEVICE), val_batch[1].to(DEVICE)
    tgt_input = tgt[:-1, :]
    src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
    with torch.no_grad():
        logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
        return loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[1:, :].reshape(-1)).item()


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    src, src_mask = src.to(DEVICE), src_mask.to(DEVICE)
    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long).to(DEVICE)
    for i in range(max_len - 1):
        tgt_mask = generate_square_subsequent_mask(ys.size(0)).type(torch.bool)
        out = model.decode(ys, memory, tgt_mask).transpose(0, 1)
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.item()
        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
        if next_word == EOS_IDX:
            break
    return ys


for epoch in range(1, args.epochs + 1):
    print(f"Epoch: {epoch}, Train loss {train_epoch(transformer, optimizer):.5f}")
    print(f"Epoch: {epoch}, Val loss {evaluate(transformer):.5f}")
transformer.eval()
src = torch.tensor([BOS_IDX, 5, 6, 7, EOS_IDX]).view(-1, 1)
with torch.no_grad():
    ys = greedy_decode(transformer, src, torch.zeros(5, 5).type(torch.bool), max_len=8, start_symbol=BOS_IDX)
print("decoded length", ys.shape[0] <= 8, "starts with BOS", ys[0, 0].item() == BOS_IDX)
