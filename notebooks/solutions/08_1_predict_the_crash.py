def predict_the_crash():
    # 35 settles, slices of 10: folds 1 and 2 are committed and trimmed (20 on the floor, 15 left in the
    # stream); fold 3 commits 10 more and dies before its trim, so the stream still holds all 15.
    # The next driver trims those 10, reads the last 5 after the cursor: 35, each once.
    return {"floor": 30, "stream": 15, "floor_after": 35}
