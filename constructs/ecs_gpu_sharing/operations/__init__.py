"""Operations against a live AWS account (boto3 lives here and nowhere else in the library)."""
