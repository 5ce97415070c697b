# A token is the job's own row's attempts: each job counts its own claims, so the three first claims
# answer 1 each. @complete compares a token with the attempts of the row it completes: z's is 1, the
# same number x's claim answered, so it passes; x's own completion passes too. Two completions counted.
whose_token = {
    "the tokens the three claims answer, in order": [1, 1, 1],
    "z, completed with the token x's claim answered": "ok",
    "x, then completed with its own claim's token": "ok",
    "completed count at the end": 2,
}
